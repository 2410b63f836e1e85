//go:build unix

package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The wrapper passes arguments and the exit status through and logs one
// line per process, with a start before its end, inside the span the
// caller saw.
func TestWrapperLogsEachProcess(t *testing.T) {
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	dir := t.TempDir()
	w, err := newWrapper(dir, "wrapped sh", sh)
	require.NoError(t, err)

	before := time.Now()
	require.NoError(t, exec.Command(w.path, "-c", "exit 0").Run())
	err = exec.Command(w.path, "-c", "exit 3").Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "want the child's exit status, got %v", err)
	require.Equal(t, 3, exit.ExitCode())
	out, err := exec.Command(w.path, "-c", `printf "%s" "$0"`, "it's here").Output()
	require.NoError(t, err)
	require.Equal(t, "it's here", string(out), "arguments pass through untouched")
	after := time.Now()

	calls, err := w.calls()
	require.NoError(t, err)
	require.Len(t, calls, 3)
	for _, c := range calls {
		require.Equal(t, "-c", c.cmd)
		require.False(t, c.end.Before(c.start))
		require.False(t, c.start.Before(before.Truncate(time.Microsecond)))
		require.False(t, c.end.After(after))
	}
}

func TestWrapperWithoutCallsHasNoLog(t *testing.T) {
	w, err := newWrapper(t.TempDir(), "terraform", filepath.Join(t.TempDir(), "missing"))
	require.NoError(t, err)
	calls, err := w.calls()
	require.NoError(t, err)
	require.Empty(t, calls)
}

func TestCalibrate(t *testing.T) {
	cost, err := calibrate(context.Background(), t.TempDir())
	require.NoError(t, err)
	require.GreaterOrEqual(t, cost, time.Duration(0))
}

func TestEpoch(t *testing.T) {
	for in, want := range map[string]time.Time{
		"1763769600.123456": time.Unix(1763769600, 123456000),
		"1763769600,5":      time.Unix(1763769600, 500000000),
		"1763769600":        time.Unix(1763769600, 0),
	} {
		got, err := epoch(in)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%s: got %v", in, got)
	}
	for _, bad := range []string{"", "x.1", "1.x"} {
		_, err := epoch(bad)
		require.Error(t, err, bad)
	}
}
