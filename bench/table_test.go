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

func TestParseInts(t *testing.T) {
	v, err := parseInts("-scale", " 12, 48,100 ")
	require.NoError(t, err)
	require.Equal(t, []int{12, 48, 100}, v)
	for _, none := range []string{"", "none"} {
		v, err := parseInts("-scale", none)
		require.NoError(t, err)
		require.Empty(t, v)
	}
	_, err = parseInts("-scale", "12,,48")
	require.ErrorContains(t, err, `-scale "12,,48"`)
}

func TestArgString(t *testing.T) {
	require.Equal(t, " -n 12 -root '/tmp/a b' -skip ''", argString([]string{"-n", "12", "-root", "/tmp/a b", "-skip", ""}))
}
