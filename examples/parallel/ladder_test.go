package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

const (
	drainMsg     = "stopping: no new units start; Ctrl-C again to interrupt terraform"
	interruptMsg = "interrupting terraform: it stops and releases its state locks; Ctrl-C again to kill it"
	killMsg      = "killing terraform"
)

// Each press is one step up the ladder, the second also cancels, presses
// past Kill say nothing more, and presses queued when the run ends are
// still handled.
func TestLadder(t *testing.T) {
	ctrlC := make(chan os.Signal, 4)
	for range 4 {
		ctrlC <- os.Interrupt
	}
	done := make(chan struct{})
	close(done)
	stop := runner.NewStop()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var notes []string
	ladder(ctrlC, done, stop, cancel, func(s string) { notes = append(notes, s) })
	require.Equal(t, runner.Kill, stop.Level())
	require.Equal(t, []string{drainMsg, interruptMsg, killMsg}, notes)
	require.ErrorIs(t, context.Cause(ctx), runner.ErrInterrupted)
	require.Empty(t, ctrlC)
}

func TestLadderDrainDoesNotCancel(t *testing.T) {
	ctrlC := make(chan os.Signal, 1)
	ctrlC <- os.Interrupt
	stop := runner.NewStop()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var notes []string
	end := onCtrlC(ctrlC, stop, cancel, func(s string) { notes = append(notes, s) })
	end()
	end() // a second call is harmless
	require.Equal(t, runner.Drain, stop.Level())
	require.Equal(t, []string{drainMsg}, notes)
	require.NoError(t, ctx.Err())
}

// The ladder through run, with every instance held by the test (a unit
// that starts waits for its instance lock): of three units, two start;
// the first Ctrl-C drains, so the one let go finishes and the third never
// starts; the second and third Ctrl-C interrupt and kill, so the one
// still held ends canceled. The summary names the unit that never started.
func TestRunCtrlCClimbsTheStopLadder(t *testing.T) {
	testenv.Terraform(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root := t.TempDir()
	source, err := demo.WriteInfra(filepath.Join(root, "infra"))
	require.NoError(t, err)
	wds, err := workdir.New(filepath.Join(root, "workdirs"))
	require.NoError(t, err)
	held := map[string]*workdir.Workdir{}
	for _, u := range clusters(source, 3, 0) {
		w, err := wds.Prepare(ctx, u.Workdir)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, w.Close()) })
		held[u.Workdir.Stack+"/"+u.Workdir.Instance] = w
	}

	out := &watched{}
	ctrlC := make(chan os.Signal, 3)
	errc := make(chan error, 1)
	go func() {
		errc <- runWithCtrlC(ctx, []string{"-root", root, "-n", "3", "-parallelism", "2",
			"-latency", "0s", "-provider-size", "0", "-progress", "lines"}, out, ctrlC)
	}()
	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case err := <-errc:
			t.Fatalf("run ended (%v) before %s:\n%s", err, what, out)
		case <-ctx.Done():
			t.Fatalf("no %s:\n%s", what, out)
		}
	}

	started := regexp.MustCompile(`(plat-ue2-dev/elasticache/redis-cluster-\d)\s+prepare\n`)
	wait("two units started", out.when(func(s string) bool { return len(started.FindAllString(s, -1)) == 2 }))
	var first, second, third string
	for _, m := range started.FindAllStringSubmatch(out.String(), -1) {
		if first == "" {
			first = m[1]
		} else {
			second = m[1]
		}
	}
	for id := range held {
		if id != first && id != second {
			third = id
		}
	}

	ctrlC <- os.Interrupt
	wait("the drain message", out.when(func(s string) bool { return strings.Contains(s, drainMsg) }))
	require.NoError(t, held[first].Close())
	firstDone := regexp.MustCompile(regexp.QuoteMeta(first) + `\s+done succeeded\n`)
	wait(first+" done", out.when(firstDone.MatchString))

	// The interrupt's message is held until the third Ctrl-C is queued, so
	// the run cannot end before the ladder reaches Kill.
	reached, release := out.holdOn(interruptMsg)
	ctrlC <- os.Interrupt
	wait("the interrupt message", reached)
	ctrlC <- os.Interrupt
	release()
	var runErr error
	select {
	case runErr = <-errc:
	case <-ctx.Done():
		t.Fatalf("run did not end:\n%s", out)
	}
	s := out.String()
	t.Log("\n" + s)
	require.ErrorIs(t, runErr, runner.ErrInterrupted)
	require.ErrorContains(t, runErr, "unit "+second)

	d, i, k := strings.Index(s, drainMsg), strings.Index(s, interruptMsg), strings.Index(s, killMsg)
	require.True(t, d >= 0 && i > d && k > i, "want the drain, interrupt and kill messages in that order:\n%s", s)
	require.Regexp(t, `(?m)^`+regexp.QuoteMeta(first)+`\s+succeeded\s`, s)
	require.Regexp(t, `(?m)^`+regexp.QuoteMeta(second)+`\s+canceled\s`, s)
	require.Regexp(t, `(?m)^`+regexp.QuoteMeta(third)+`\s+skipped\s`, s)
	require.Contains(t, s, "\nnever started: "+third+"\n")
	require.Contains(t, s, "tfisolate: 1/3 succeeded")
	require.NotRegexp(t, regexp.QuoteMeta(third)+`\s+prepare`, s, "a unit started after the drain")
}

// watched is the test's stdout: safe for concurrent writes, it tells when
// what was written satisfies a condition, and can hold a write that
// contains a given text until released.
type watched struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	waits []watch
	hold  *hold
}

type watch struct {
	cond func(string) bool
	ch   chan struct{}
}

type hold struct {
	text             string
	reached, release chan struct{}
}

func (w *watched) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(b)
	s := w.buf.String()
	keep := w.waits[:0]
	for _, wt := range w.waits {
		if wt.cond(s) {
			close(wt.ch)
		} else {
			keep = append(keep, wt)
		}
	}
	w.waits = keep
	h := w.hold
	if h != nil && bytes.Contains(b, []byte(h.text)) {
		w.hold = nil
	} else {
		h = nil
	}
	w.mu.Unlock()
	if h != nil {
		close(h.reached)
		<-h.release
	}
	return len(b), nil
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// when returns a channel closed once cond holds for everything written.
func (w *watched) when(cond func(string) bool) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	if cond(w.buf.String()) {
		close(ch)
	} else {
		w.waits = append(w.waits, watch{cond, ch})
	}
	return ch
}

// holdOn makes the next write containing text block until release is
// called; reached is closed when that write arrives.
func (w *watched) holdOn(text string) (reached <-chan struct{}, release func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := &hold{text: text, reached: make(chan struct{}), release: make(chan struct{})}
	w.hold = h
	return h.reached, sync.OnceFunc(func() { close(h.release) })
}
