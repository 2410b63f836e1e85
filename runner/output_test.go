package runner

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOutputLinesNeverInterleave writes lines in small, split chunks from
// many units and streams at once: every combined line must be one whole
// line of one unit, and each log gets exactly its unit's lines.
func TestOutputLinesNeverInterleave(t *testing.T) {
	out := &syncBuffer{}
	c := &combined{w: out}
	const units, lines = 8, 200
	logs := make([]*syncBuffer, units)
	var wg sync.WaitGroup
	for u := range units {
		logs[u] = &syncBuffer{}
		uo := newUnitOutput(fmt.Sprintf("u%d", u), c, logs[u])
		for s := range 2 {
			wg.Go(func() {
				w := uo.stream()
				for i := range lines {
					line := fmt.Sprintf("unit %d stream %d line %03d\n", u, s, i)
					// Split mid-line so a naive writer would interleave.
					w.Write([]byte(line[:7]))
					w.Write([]byte(line[7:]))
				}
				w.Write([]byte("tail without newline"))
				w.flush()
			})
		}
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, got, units*2*(lines+1))
	for _, l := range got {
		var u, u2, s, i int
		if strings.HasSuffix(l, "tail without newline") {
			_, err := fmt.Sscanf(l, "[u%d] tail without newline", &u)
			require.NoError(t, err, l)
			continue
		}
		_, err := fmt.Sscanf(l, "[u%d] unit %d stream %d line %d", &u, &u2, &s, &i)
		require.NoError(t, err, "torn line %q", l)
		require.Equal(t, u, u2, "line of unit %d under prefix of unit %d", u2, u)
	}
	for u, lg := range logs {
		ls := strings.Split(strings.TrimSuffix(lg.String(), "\n"), "\n")
		require.Len(t, ls, 2*(lines+1))
		for _, l := range ls {
			require.True(t, strings.HasPrefix(l, fmt.Sprintf("unit %d ", u)) || l == "tail without newline", l)
		}
	}
}
