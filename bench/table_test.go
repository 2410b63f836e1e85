package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	writeTable(&b, [][]string{{"approach", "n"}, {"a", "12"}, {"longer one", "3"}}, 1)
	require.Equal(t, ""+
		"| approach   |   n |\n"+
		"| ---------- | --: |\n"+
		"| a          |  12 |\n"+
		"| longer one |   3 |\n", b.String())
}

func TestFormats(t *testing.T) {
	require.Equal(t, "1.50 s", secs(1500*time.Millisecond))
	require.Equal(t, "29.4 s", secs(29400*time.Millisecond))
	require.Equal(t, "42 ms", millis(42*time.Millisecond))
	require.Equal(t, "2.00x", ratio(4*time.Second, 2*time.Second))
	require.Equal(t, "n/a", ratio(time.Second, 0))
	require.Equal(t, "1.5 MiB", mib(3<<19))
}
