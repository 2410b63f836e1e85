//go:build unix

package tfcmd

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// signalWriter closes seen once what was written contains want.
type signalWriter struct {
	mu   sync.Mutex
	b    strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// TestKilledSignIsTheLastWrite: a process that had to be killed leaves,
// in KilledSign, when it last wrote its output: after it started, no
// later than the kill (nothing is dated after the process was gone), and
// never a time from a process that ended by itself.
func TestKilledSignIsTheLastWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	engine := filepath.Join(dir, "engine")
	// It writes one line, then waits without writing until it is killed.
	require.NoError(t, os.WriteFile(engine, []byte("#!/bin/sh\necho last words\nexec sleep 600\n"), 0o755))
	out := &signalWriter{want: "last words", seen: make(chan struct{})}
	kill := make(chan struct{})
	p := &Process{Path: engine, Dir: dir, Env: os.Environ(), Grace: time.Minute, Kill: kill,
		OutDir: filepath.Join(dir, OutputDir),
		Stream: func() (io.Writer, func()) { return out, func() {} },
		Note:   func(string) {}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	before := time.Now()
	var killedAt time.Time
	go func() {
		<-out.seen
		killedAt = time.Now()
		close(kill)
	}()
	_, err := p.Run(ctx, Validate(ValidateOptions{}))
	require.Error(t, err)
	require.True(t, p.Killed())
	sign := p.KilledSign()
	require.False(t, sign.IsZero())
	// The file's time comes from the kernel's coarse clock, never ahead
	// of time.Now, and the write happened after Run began.
	require.False(t, sign.After(killedAt), "sign %s, killed at %s", sign, killedAt)
	require.False(t, sign.Before(before.Add(-10*time.Millisecond)), "sign %s, run began %s", sign, before)

	// A process that ends by itself leaves the last sign as it was (a
	// Kill of its own: the first one's is closed, and would kill it).
	p.Kill = make(chan struct{})
	require.NoError(t, os.WriteFile(engine, []byte("#!/bin/sh\necho fine\n"), 0o755))
	_, err = p.Run(ctx, Validate(ValidateOptions{}))
	require.NoError(t, err)
	require.Equal(t, sign, p.KilledSign())
}
