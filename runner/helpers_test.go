package runner

import (
	"context"
	"sync"
	"testing"
	"time"
)

// testCtx is the test's context with a deadline: the deadline only turns
// a hang (a gate that never opens) into a failure; nothing waits for it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// recorder keeps every event in order. WithEvents serializes the calls;
// the mutex is for reading while a run is still going.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (rec *recorder) add(e Event) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.events = append(rec.events, e)
}

// all returns a copy of the events so far.
func (rec *recorder) all() []Event {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Event(nil), rec.events...)
}

// index returns the position of the first event of unit in phase, or -1.
func (rec *recorder) index(unit string, p Phase) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, e := range rec.events {
		if e.Unit == unit && e.Phase == p {
			return i
		}
	}
	return -1
}

func (rec *recorder) event(unit string, p Phase) Event {
	i := rec.index(unit, p)
	if i < 0 {
		return Event{}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.events[i]
}

// peak is the highest number of units between their prepare and done
// events at any point.
func (rec *recorder) peak() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	cur, peak := 0, 0
	running := map[string]bool{}
	for _, e := range rec.events {
		switch {
		case e.Phase == PhasePrepare:
			running[e.Unit] = true
			cur++
		case e.Phase == PhaseDone && running[e.Unit]:
			cur--
		}
		peak = max(peak, cur)
	}
	return peak
}

func statuses(rep *Report) map[string]Status {
	m := map[string]Status{}
	for _, r := range rep.Results {
		m[r.Unit] = r.Status
	}
	return m
}
