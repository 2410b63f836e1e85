//go:build unix

package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCPUTimes(t *testing.T) {
	got := parseCPUTimes("cpu  2011955 531 662173 689433 22597 0 14499 16695 0 0")
	require.Equal(t, cpuTimes{total: 2011955 + 531 + 662173 + 689433 + 22597 + 0 + 14499 + 16695, steal: 16695, ok: true}, got)
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 3 4 5 6 7 x"} {
		require.False(t, parseCPUTimes(bad).ok, "%q", bad)
	}
	require.Equal(t, "n/a", cpuTimes{}.stealSince(), "no start, no share")
}
