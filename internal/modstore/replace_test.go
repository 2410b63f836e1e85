package modstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReplace: Replace puts a new tree in place of the stored one (Get
// then hands out the new one without filling), fills an absent key, and
// leaves the entry alone when keep says so, without running fill.
func TestReplace(t *testing.T) {
	ctx := context.Background()
	dir, count := t.TempDir(), filepath.Join(t.TempDir(), "fills")
	s, err := Open(dir)
	require.NoError(t, err)
	const key = "engine 1.11.4\nmod\tregistry/x/y/z\t>= 1.0.0"

	got, replaced, err := s.Replace(ctx, key, nil, countingFill(count, "first"))
	require.NoError(t, err)
	require.True(t, replaced, "an absent key is filled")
	requireTree(t, got, "first")
	require.Equal(t, Stats{Fills: 1}, s.Stats())

	got, replaced, err = s.Replace(ctx, key, nil, countingFill(count, "second"))
	require.NoError(t, err)
	require.True(t, replaced)
	requireTree(t, got, "second")
	require.Equal(t, Stats{Fills: 2, Replaces: 1}, s.Stats())

	got, filled, err := s.Get(ctx, key, countingFill(count, "third"))
	require.NoError(t, err)
	require.False(t, filled, "Get hands out the replacing entry")
	requireTree(t, got, "second")

	// keep sees the current tree and keeps it: fill does not run.
	var seen string
	got, replaced, err = s.Replace(ctx, key, func(tree string) (bool, error) {
		seen = tree
		b, err := os.ReadFile(filepath.Join(tree, "main.tf"))
		return string(b) == "second main.tf\n", err
	}, countingFill(count, "fourth"))
	require.NoError(t, err)
	require.False(t, replaced)
	require.Equal(t, got, seen)
	requireTree(t, got, "second")

	// keep's error is returned; nothing changes.
	boom := errors.New("boom")
	_, _, err = s.Replace(ctx, key, func(string) (bool, error) { return false, boom }, countingFill(count, "fifth"))
	require.ErrorIs(t, err, boom)
	require.Equal(t, 2, countLines(t, count), "fill ran only for the two replacements")

	// A damaged entry is replaced without asking keep.
	require.NoError(t, os.Remove(filepath.Join(got, "main.tf")))
	got, replaced, err = s.Replace(ctx, key, func(string) (bool, error) {
		t.Error("keep was asked about a damaged entry")
		return true, nil
	}, countingFill(count, "sixth"))
	require.NoError(t, err)
	require.True(t, replaced)
	requireTree(t, got, "sixth")
	requireNoLeftovers(t, dir)

	_, _, err = s.Replace(ctx, "", nil, countingFill(count, "x"))
	require.ErrorIs(t, err, ErrInvalidKey)
	_, _, err = s.Replace(ctx, key, nil, nil)
	require.ErrorIs(t, err, ErrNilFill)
}

// TestCopyIsNeverTorn replaces the entry while Copy copies it: after
// Copy read the manifest but before it copied a file (the copy is then
// all new, the manifest old), and after it copied the first file of the
// old tree (the copy holds half of each). Either way the copy does not
// match the manifest it started from, is thrown away and taken again:
// the result is the new tree, whole.
func TestCopyIsNeverTorn(t *testing.T) {
	for _, tc := range []struct{ name, point string }{
		{"after the manifest", "copying"},
		{"after the first file", "copied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir, count := t.TempDir(), filepath.Join(t.TempDir(), "fills")
			s, err := Open(dir)
			require.NoError(t, err)
			const key = "k"
			_, _, err = s.Get(ctx, key, countingFill(count, "old"))
			require.NoError(t, err)

			replaced := false
			at := func(point string) {
				if point == tc.point && !replaced {
					replaced = true
					_, _, err := s.Replace(ctx, key, nil, countingFill(count, "new"))
					require.NoError(t, err)
				}
			}
			s.testHookPoint = at
			s.testHookCopied = func() { at("copied") }

			dst := filepath.Join(t.TempDir(), "copy")
			filled, err := s.Copy(ctx, key, dst, countingFill(count, "never"))
			require.NoError(t, err)
			require.False(t, filled)
			require.True(t, replaced)
			requireTree(t, dst, "new")
			require.EqualValues(t, 1, s.Stats().Recopies, "the torn copy was taken again")
			require.Equal(t, 2, countLines(t, count))
			requireNoLeftovers(t, dir)
		})
	}
}

// TestCopyDamagedUnderLock: an entry that keeps changing behind the
// store's back (a file rewritten into the entry after every copy) is
// copied under the key's lock at last, and then refused by name.
func TestCopyDamagedUnderLock(t *testing.T) {
	ctx := context.Background()
	dir, count := t.TempDir(), filepath.Join(t.TempDir(), "fills")
	s, err := Open(dir)
	require.NoError(t, err)
	tree, _, err := s.Get(ctx, "k", countingFill(count, "old"))
	require.NoError(t, err)
	s.testHookCopied = func() {
		// A file not copied yet (main.tf comes first), rewritten in place.
		require.NoError(t, os.WriteFile(filepath.Join(tree, "sub", "a.tf"), []byte("bad sub/a.tf\n"), 0o644))
	}
	dst := filepath.Join(t.TempDir(), "copy")
	_, err = s.Copy(ctx, "k", dst, countingFill(count, "refill"))
	require.ErrorIs(t, err, ErrDamagedEntry)
	require.Contains(t, err.Error(), "sub/a.tf")
	require.NoDirExists(t, dst, "a bad copy is removed")

	_, err = s.Copy(ctx, "k", tree, countingFill(count, "x"))
	require.ErrorIs(t, err, os.ErrExist, "dst must not exist")
}

// TestKilledReplaceLeavesOldOrNothing SIGKILLs a process replacing an
// entry: before the old entry is set aside, the old one is still handed
// out; after it is set aside and before the new one is in place, there is
// no entry, and the next Get fills afresh and sweeps both trees the
// killed process left.
func TestKilledReplaceLeavesOldOrNothing(t *testing.T) {
	for _, tc := range []struct {
		point string
		old   bool // the old entry is still in place
	}{
		{point: "synced", old: true},
		{point: "replaced"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			dir, count := t.TempDir(), filepath.Join(t.TempDir(), "fills")
			const key = "replace-key"
			s, err := Open(dir)
			require.NoError(t, err)
			_, _, err = s.Get(context.Background(), key, countingFill(count, "old"))
			require.NoError(t, err)

			c := startChild(t, "replace", envDir+"="+dir, envKey+"="+key, envCount+"="+count,
				envContent+"=new", envPoint+"="+tc.point)
			c.Expect(t, "at "+tc.point)
			kill(t, c)
			require.Equal(t, 2, countLines(t, count))

			got, filled, err := s.Get(context.Background(), key, countingFill(count, "third"))
			require.NoError(t, err)
			if tc.old {
				require.False(t, filled)
				requireTree(t, got, "old")
				// The killed fill's temp dir goes with the next locked use.
				_, _, err = s.Replace(context.Background(), key, func(string) (bool, error) { return true, nil }, countingFill(count, "never"))
				require.NoError(t, err)
			} else {
				require.True(t, filled, "no entry: filled afresh")
				requireTree(t, got, "third")
			}
			requireNoLeftovers(t, dir)
		})
	}
}
