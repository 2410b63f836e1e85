package modserve

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

// tgz packs headers (with their bodies) as a tar.gz.
func tgz(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		body := []byte(h.Linkname)
		if h.Typeflag == tar.TypeReg {
			h.Linkname, h.Size = "", int64(len(body))
		}
		require.NoError(t, tw.WriteHeader(&h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write(body)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return b.Bytes()
}

// TestUnpackRefuses: a path leaving the tree, an absolute path, a link
// pointing out of it, a device, a file twice and a tree over the size
// limit are each ErrBadArchive, and nothing is written outside dir.
func TestUnpackRefuses(t *testing.T) {
	reg := func(name, body string) tar.Header {
		return tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Linkname: body}
	}
	for name, archive := range map[string][]byte{
		"dotdot":       tgz(t, reg("../escape.tf", "x")),
		"nested":       tgz(t, reg("a/../../escape.tf", "x")),
		"absolute":     tgz(t, reg("/tmp/escape.tf", "x")),
		"link out":     tgz(t, tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../../etc"}),
		"link abs":     tgz(t, tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}),
		"device":       tgz(t, tar.Header{Name: "dev", Typeflag: tar.TypeChar, Mode: 0o644}),
		"twice":        tgz(t, reg("a.tf", "x"), reg("a.tf", "y")),
		"over the cap": tgz(t, reg("big.tf", string(make([]byte, 2048)))),
	} {
		parent := t.TempDir()
		dir := filepath.Join(parent, "tree")
		require.NoError(t, os.Mkdir(dir, 0o755))
		err := unpack(bytes.NewReader(archive), "tar.gz", dir, 1024)
		require.ErrorIs(t, err, ErrBadArchive, name)
		ents, err := os.ReadDir(parent)
		require.NoError(t, err)
		require.Len(t, ents, 1, "%s: nothing beside the tree", name)
	}
}

// TestPackIsDeterministicAndChecked: the same tree packs to the same
// bytes twice and unpacks to a tree of the same digest; a file changed
// after its record was taken fails the pack.
func TestPackIsDeterministicAndChecked(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte("a"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.Symlink("main.tf", filepath.Join(dir, "link.tf")))
	rec, err := treesum.Record(dir)
	require.NoError(t, err)
	var a, b bytes.Buffer
	sa, err := pack(&a, dir, rec)
	require.NoError(t, err)
	sb, err := pack(&b, dir, rec)
	require.NoError(t, err)
	require.Equal(t, a.Bytes(), b.Bytes())
	require.Equal(t, sa, sb)
	out := t.TempDir()
	require.NoError(t, unpack(&a, "tar.gz", out, DefaultMaxSize))
	got, err := treesum.Record(out)
	require.NoError(t, err)
	require.Equal(t, rec.Digest(), got.Digest())

	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte("b"), 0o644))
	_, err = pack(&bytes.Buffer{}, dir, rec)
	require.ErrorContains(t, err, "main.tf changed since the tree was verified")
}
