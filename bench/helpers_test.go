package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// section is the text of out from the line starting with heading up to the
// next heading of any level.
func section(t *testing.T, out, heading string) string {
	t.Helper()
	i := strings.Index(out, "\n"+heading)
	require.GreaterOrEqual(t, i, 0, "no %q in:\n%s", heading, out)
	rest := out[i+1:]
	if j := strings.Index(rest[len(heading):], "\n#"); j >= 0 {
		rest = rest[:len(heading)+j]
	}
	return rest
}

// subsection is section(heading) of the text after the line starting with
// parent.
func subsection(t *testing.T, out, parent, heading string) string {
	t.Helper()
	i := strings.Index(out, "\n"+parent)
	require.GreaterOrEqual(t, i, 0, "no %q in:\n%s", parent, out)
	return section(t, out[i:], heading)
}

// tableRow returns the cells of the table row in s whose first cell starts with
// prefix.
func tableRow(t *testing.T, s, prefix string) []string {
	t.Helper()
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.HasPrefix(cells[0], prefix) {
			return cells
		}
	}
	t.Fatalf("no row %q in:\n%s", prefix, s)
	return nil
}
