package testbackend

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
)

// maxLogBytes bounds the memory a server's log may take: past it the oldest
// half of the lines is dropped (WaitLog then cannot see them).
const maxLogBytes = 32 << 20

// serverLog keeps the lines a server writes to a pipe and wakes waiters on
// each new line.
type serverLog struct {
	mu      sync.Mutex
	lines   []string
	dropped int // lines dropped from the front
	size    int
	ended   bool
	changed chan struct{} // closed and replaced on every new line and at EOF
	done    chan struct{} // closed at EOF: every writer has gone
}

func newServerLog(r io.ReadCloser) *serverLog {
	l := &serverLog{changed: make(chan struct{}), done: make(chan struct{})}
	go l.read(r)
	return l
}

func (l *serverLog) read(r io.ReadCloser) {
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			l.add(strings.TrimSuffix(line, "\n"))
		}
		if err != nil {
			break
		}
	}
	l.mu.Lock()
	l.ended = true
	close(l.changed)
	close(l.done)
	l.mu.Unlock()
}

func (l *serverLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	l.size += len(line) + 1
	if l.size > maxLogBytes {
		n := len(l.lines) / 2
		for _, s := range l.lines[:n] {
			l.size -= len(s) + 1
		}
		l.lines = append([]string(nil), l.lines[n:]...)
		l.dropped += n
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// len is the number of lines logged so far, dropped ones included.
func (l *serverLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped + len(l.lines)
}

// containsSince reports whether a line logged at or after index mark
// contains any of subs.
func (l *serverLog) containsSince(mark int, subs ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines[max(mark-l.dropped, 0):] {
		for _, sub := range subs {
			if strings.Contains(s, sub) {
				return true
			}
		}
	}
	return false
}

func (l *serverLog) wait(ctx context.Context, match func(string) bool) (string, error) {
	next := 0 // index of the next line to look at, dropped ones included
	for {
		// match runs outside the lock so that it may call Log.
		l.mu.Lock()
		fresh := append([]string(nil), l.lines[min(max(next-l.dropped, 0), len(l.lines)):]...)
		next = l.dropped + len(l.lines)
		ended, changed := l.ended, l.changed
		l.mu.Unlock()
		for _, s := range fresh {
			if match(s) {
				return s, nil
			}
		}
		if ended {
			return "", ErrLogEnded
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	return strings.Join(l.lines, "\n") + "\n"
}

func (l *serverLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines[max(len(l.lines)-n, 0):], "\n")
}
