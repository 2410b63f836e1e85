package workdir

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

func TestNewRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opt   Option
		value string
	}{
		{"zero retry", WithLockRetry(0), "WithLockRetry(0s)"},
		{"negative retry", WithLockRetry(-time.Second), "WithLockRetry(-1s)"},
		{"nil option", nil, "#2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			m, err := New(root, WithLogger(nil), tc.opt)
			require.Nil(t, m)
			require.ErrorIs(t, err, ErrInvalid)
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, "option", ie.Field)
			require.Equal(t, tc.value, ie.Value)
			require.Contains(t, err.Error(), tc.value)
			require.NoDirExists(t, root, "a refused option leaves nothing behind")
		})
	}
}

func TestOptionsApplyInOrder(t *testing.T) {
	m, err := New(filepath.Join(t.TempDir(), "root"), WithLockRetry(time.Second), WithLockRetry(time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, time.Millisecond, m.lockRetry, "the last option wins")

	// WithLogger(nil) is the default: discard, never a panic.
	h := &signalHandler{Handler: slog.DiscardHandler, waiting: make(chan struct{})}
	m, err = New(filepath.Join(t.TempDir(), "root"), WithLogger(slog.New(h)), WithLogger(nil))
	require.NoError(t, err)
	src := t.TempDir()
	testenv.WriteTree(t, src, component)
	w, err := m.Prepare(context.Background(), Spec{Stack: "s", Instance: "i", Source: src})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	_, err = os.Stat(w.Dir)
	require.NoError(t, err)
}
