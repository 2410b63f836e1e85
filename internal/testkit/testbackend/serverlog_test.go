package testbackend

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServerLogWait(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	l := newServerLog(r)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	_, err = w.WriteString("[a] LOG:  one\n[b] LOG:  two\n")
	require.NoError(t, err)
	// A line logged before the call counts.
	line, err := l.wait(ctx, func(s string) bool { return strings.HasPrefix(s, "[b]") })
	require.NoError(t, err)
	require.Equal(t, "[b] LOG:  two", line)

	// A line logged after the call wakes it; match may read the log.
	got := make(chan string, 1)
	go func() {
		s, err := l.wait(ctx, func(s string) bool { return strings.Contains(l.String(), "three") && s == "[c] three" })
		if err != nil {
			s = err.Error()
		}
		got <- s
	}()
	_, err = w.WriteString("[c] three\n")
	require.NoError(t, err)
	require.Equal(t, "[c] three", <-got)
	require.Equal(t, 3, l.len())
	require.True(t, l.containsSince(2, "three"))
	require.False(t, l.containsSince(2, "two"))

	// A line without a newline still counts once the writer is gone, and
	// then waiting for anything else ends with ErrLogEnded.
	_, err = w.WriteString("last")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	<-l.done
	require.Equal(t, "[a] LOG:  one\n[b] LOG:  two\n[c] three\nlast\n", l.String())
	require.Equal(t, "[c] three\nlast", l.tail(2))
	_, err = l.wait(ctx, func(s string) bool { return s == "never" })
	require.ErrorIs(t, err, ErrLogEnded)
}

func TestServerLogWaitContext(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	l := newServerLog(r)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.wait(ctx, func(string) bool { return false })
	require.ErrorIs(t, err, context.Canceled)
}
