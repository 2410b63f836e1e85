package modstore

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// lockedWriter serializes writes of the store's goroutines into one
// builder the test reads under the same mutex.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newTestLogger(w io.Writer, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{w, mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestWithLogger(t *testing.T) {
	var mu sync.Mutex
	var b strings.Builder
	s, err := Open(t.TempDir(), WithLogger(newTestLogger(&b, &mu)))
	require.NoError(t, err)
	_, _, err = s.Get(context.Background(), "k", func(_ context.Context, dir string) error { return writeTree(dir, "v") })
	require.NoError(t, err)
	mu.Lock()
	require.Contains(t, b.String(), "filling entry")
	require.Contains(t, b.String(), "stored entry")
	mu.Unlock()

	// nil means discard, and is the default: nothing panics.
	for _, opts := range [][]Option{{WithLogger(nil)}, nil} {
		s, err := Open(t.TempDir(), opts...)
		require.NoError(t, err)
		_, _, err = s.Get(context.Background(), "k", func(_ context.Context, dir string) error { return writeTree(dir, "v") })
		require.NoError(t, err)
	}
}

func TestWithLockRetry(t *testing.T) {
	cases := []struct {
		name string
		d    string
		opt  Option
		ok   bool
	}{
		{"positive", "1ms", WithLockRetry(1e6), true},
		{"zero", "0s", WithLockRetry(0), false},
		{"negative", "-1ns", WithLockRetry(-1), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(t.TempDir(), tc.opt)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "WithLockRetry("+tc.d+")")
		})
	}
}
