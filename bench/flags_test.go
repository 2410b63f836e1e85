package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-n", "0"},
		{"-parallelism", "-1"},
		{"-scale", "12,x"},
		{"-scale", "0"},
		{"-scale-parallelism", "none"},
		{"-latency", "-1s"},
		{"-throttle", "-5"},
		{"-skip", "bogus"},
		{"-large-n", "0"},
		{"-wide-n", "0"},
		{"-wide-parallelism", "0"},
		{"-floor-reps", "0"},
		{"-large-provider-size", "-1"},
		{"-memory-n", "0"},
		{"-memory-provider-mib", "0"},
		{"-memory-limit", "0"},
		{"-cost-n", "x"},
		{"-cost-queue", "0"},
		{"-cost-parallelism", "0"},
		{"-cost-idle", "-1"},
		{"-cost-instances", "-1"},
		{"-cost-reps", "0"},
		{"extra"},
	} {
		err := run(context.Background(), args, &bytes.Buffer{})
		require.Error(t, err, "%v", args)
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
