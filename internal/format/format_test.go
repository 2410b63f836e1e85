package format

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheck: a newer version is a *NewerError naming the record, its
// version and the newest this release reads, matched by ErrNewer through
// any wrapping; the same or an older version is not an error.
func TestCheck(t *testing.T) {
	require.NoError(t, Check("r", 1, 2))
	require.NoError(t, Check("r", 2, 2))
	err := fmt.Errorf("unit a: %w", Check("/root/.memory.json", 3, 2))
	require.ErrorIs(t, err, ErrNewer)
	var newer *NewerError
	require.True(t, errors.As(err, &newer))
	require.Equal(t, NewerError{Record: "/root/.memory.json", Have: 3, Reads: 2}, *newer)
	require.EqualError(t, err, "unit a: /root/.memory.json: written by a newer release: format 3; this release reads up to 2; upgrade this job")
}

// TestVersion: a record names its version; one that names none was
// written before records did, version 1; anything else is an error.
func TestVersion(t *testing.T) {
	for in, want := range map[string]int{`{}`: 1, `{"inputs":"x"}`: 1, `{"version":1}`: 1, `{"version":7,"new":{}}`: 7} {
		v, err := Version([]byte(in))
		require.NoError(t, err, in)
		require.Equal(t, want, v, in)
	}
	for _, in := range []string{``, `[]`, `{"version":0}`, `{"version":-1}`, `{"version":1.5}`, `{"version":"2"}`, `{"version":1e40}`} {
		_, err := Version([]byte(in))
		require.Error(t, err, in)
	}
	v, err := Read("r", []byte(`{"version":3}`), 2)
	require.Equal(t, 3, v)
	require.ErrorIs(t, err, ErrNewer)
	_, err = Read("r", []byte(`x`), 2)
	require.ErrorContains(t, err, "r: ")
	require.NotErrorIs(t, err, ErrNewer)
}
