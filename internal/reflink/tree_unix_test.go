//go:build linux || darwin || freebsd

package reflink_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/reflink"
)

func TestCopyTreeRefusesSpecialFiles(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600))
	err := reflink.CopyTree(filepath.Join(t.TempDir(), "copy"), src)
	require.ErrorContains(t, err, "not a regular file, directory or symlink")
}
