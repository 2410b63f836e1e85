package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFingerprintEncoding pins the encoding the init, applied and plan
// records are written with (a change would make every record on disk
// differ), and shows that fields cannot run into each other.
func TestFingerprintEncoding(t *testing.T) {
	fp := newFingerprint()
	fp.addString("engine", "terraform 1.11.4")
	fp.add("args", []byte("a\x00b"))
	want := sha256.Sum256([]byte("engine 16\nterraform 1.11.4args 3\na\x00b"))
	require.Equal(t, hex.EncodeToString(want[:]), fp.sum())

	sum := func(fields ...string) string {
		fp := newFingerprint()
		for i := 0; i < len(fields); i += 2 {
			fp.addString(fields[i], fields[i+1])
		}
		return fp.sum()
	}
	require.Equal(t, sum("a", "xy", "b", ""), sum("a", "xy", "b", ""), "the same fields, the same sum")
	require.NotEqual(t, sum("a", "xy", "b", ""), sum("a", "x", "b", "y"), "a value never runs into the next field")
	require.NotEqual(t, sum("a", "1", "b", "2"), sum("b", "2", "a", "1"), "the order counts")
	require.NotEqual(t, sum("a", ""), sum(), "an empty field counts")

	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("xy"), 0o644))
	withFile := newFingerprint()
	withFile.addFile("a", p)
	require.Equal(t, sum("a", "xy"), withFile.sum())
	missing := newFingerprint()
	missing.addFile("a", filepath.Join(dir, "none"))
	require.Equal(t, sum("a", ""), missing.sum(), "a missing file counts as empty")
}
