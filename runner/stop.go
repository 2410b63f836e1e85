package runner

import "sync"

// StopLevel is how far a Stop has gone.
type StopLevel int

// Stop levels, in the order repeated requests reach them.
const (
	// NotStopped: no request yet.
	NotStopped StopLevel = iota
	// Drain: no new unit starts; running units finish normally.
	Drain
	// Interrupt: running terraform processes get SIGINT (they stop, write
	// state and release their state locks) and are killed only after the
	// interrupt grace; their units end Canceled.
	Interrupt
	// Kill: running terraform processes are killed at once.
	Kill
)

// String names the level.
func (l StopLevel) String() string {
	switch l {
	case NotStopped:
		return "not stopped"
	case Drain:
		return "drain"
	case Interrupt:
		return "interrupt"
	case Kill:
		return "kill"
	}
	return "StopLevel(?)"
}

// Stop is a cancellation ladder for host CLIs, as a terminal user expects
// from repeated Ctrl-C: the first Request drains (no new unit starts,
// running ones finish), the second interrupts terraform, the third kills
// it. A Stop given to RunWith (WithStop) ends only that Run; one given to
// New applies to every Run of that runner, the ones under way and later
// ones. Units that never started are in the report (Result.Started
// false, ErrStopped). Cancelling Run's context is
// the same as a second request for that Run. The zero Stop is ready to
// use, like NewStop's. Its methods are safe for concurrent use.
type Stop struct {
	mu        sync.Mutex
	level     StopLevel
	drain     chan struct{}
	interrupt chan struct{}
	kill      chan struct{}
}

// NewStop returns a Stop at NotStopped.
func NewStop() *Stop { return &Stop{} }

// channels makes the zero Stop's channels on first use; s.mu is held.
func (s *Stop) channels() {
	if s.drain == nil {
		s.drain, s.interrupt, s.kill = make(chan struct{}), make(chan struct{}), make(chan struct{})
	}
}

// Request moves one level up the ladder (at most to Kill) and returns the
// level reached.
func (s *Stop) Request() StopLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels()
	switch s.level {
	case NotStopped:
		close(s.drain)
	case Drain:
		close(s.interrupt)
	case Interrupt:
		close(s.kill)
	default:
		return s.level
	}
	s.level++
	return s.level
}

// Level returns the level reached so far.
func (s *Stop) Level() StopLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

// Draining returns a channel closed at the first request.
func (s *Stop) Draining() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels()
	return s.drain
}

// Interrupting returns a channel closed at the second request.
func (s *Stop) Interrupting() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels()
	return s.interrupt
}

// Killing returns a channel closed at the third request.
func (s *Stop) Killing() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels()
	return s.kill
}
