package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/tfisolate/tfisolate/runner"
)

// progress shows the run while it goes: on a terminal, one line per unit
// redrawn in place; otherwise one line per event.
type progress struct {
	w    io.Writer
	live bool
	ids  []string

	mu    sync.Mutex
	units map[string]*unitView
	notes []string // the example's own messages, shown under the units
	drawn int      // lines drawn last time, to move back over them
	width int      // of the widest unit ID, to align the columns
	// drawing is set once start begins the live view; before, the story
	// is still being printed and must not be drawn over.
	drawing bool

	stopTick context.CancelFunc
	ticker   sync.WaitGroup
}

type unitView struct {
	phase  runner.Phase
	status runner.Status
	start  time.Time
	end    time.Time
}

// newViews returns where the example tells its story (stdout, or stderr
// with -json, where stdout carries only the report) and the progress view
// on the same stream.
func newViews(stdout io.Writer, o *options) (*syncWriter, *progress) {
	say := &syncWriter{w: stdout}
	if o.json {
		say = &syncWriter{w: os.Stderr}
	}
	live := o.live == "live"
	if o.live == "auto" {
		if f, ok := say.w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			live = true
		}
	}
	return say, &progress{w: say, live: live, units: map[string]*unitView{}}
}

// start shows the units, and on a terminal begins the periodic redraw of
// elapsed times.
func (p *progress) start(ctx context.Context, units []runner.Unit) {
	p.mu.Lock()
	for _, u := range units {
		// The runner's default unit ID.
		id := u.Workdir.Stack + "/" + u.Workdir.Instance
		if _, ok := p.units[id]; !ok {
			p.units[id] = &unitView{}
			p.ids = append(p.ids, id)
			p.width = max(p.width, len(id))
		}
	}
	if !p.live {
		p.mu.Unlock()
		return
	}
	p.drawing = true
	p.mu.Unlock()
	ctx, p.stopTick = context.WithCancel(ctx)
	p.ticker.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			}
		}
	})
}

// stop ends the redraw and leaves the final view on screen.
func (p *progress) stop() {
	if p.stopTick != nil {
		p.stopTick()
		p.ticker.Wait()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		p.draw()
	}
}

// event is the runner's callback; it may be called from many goroutines.
func (p *progress) event(e runner.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.units[e.Unit]
	if u == nil {
		u = &unitView{}
		p.units[e.Unit] = u
		p.ids = append(p.ids, e.Unit)
		p.width = max(p.width, len(e.Unit))
	}
	if u.start.IsZero() && e.Phase != runner.PhaseQueued {
		u.start = e.Time
	}
	u.phase, u.status = e.Phase, e.Status
	if e.Phase == runner.PhaseDone {
		u.end = e.Time
	}
	if p.live {
		p.draw()
		return
	}
	line := fmt.Sprintf("%s %-*s %s", e.Time.Format("15:04:05.000"), p.width, e.Unit, e.Phase)
	if e.Phase == runner.PhaseDone {
		line += " " + e.Status.String()
		if e.Err != nil {
			line += ": " + firstLine(e.Err.Error())
		}
	}
	fmt.Fprintln(p.w, line)
}

// note shows a message of the example's own (the stop ladder's): on a
// terminal under the unit lines, otherwise as a line of its own.
func (p *progress) note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawing {
		p.notes = append(p.notes, msg)
		p.draw()
		return
	}
	fmt.Fprintf(p.w, "%s %s\n", time.Now().Format("15:04:05.000"), msg)
}

// draw rewrites the unit lines and notes in place; p.mu is held.
func (p *progress) draw() {
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.drawn)
	}
	now := time.Now()
	for _, id := range p.ids {
		u := p.units[id]
		state := u.phase.String()
		if u.phase == runner.PhaseDone {
			state = u.status.String()
		}
		elapsed := ""
		switch {
		case !u.end.IsZero():
			elapsed = u.end.Sub(u.start).Round(100 * time.Millisecond).String()
		case !u.start.IsZero():
			elapsed = now.Sub(u.start).Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "\x1b[2K%-*s  %-10s %8s\n", p.width, id, state, elapsed)
	}
	for _, n := range p.notes {
		fmt.Fprintf(&b, "\x1b[2K%s\n", n)
	}
	p.drawn = len(p.ids) + len(p.notes)
	io.WriteString(p.w, b.String())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// syncWriter serializes writes: the story, the progress view and the
// stop ladder's messages share one stream.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
