package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// TestFingerprintEncoding pins the encoding the init, applied and plan
// records are written with (a change would make every record on disk
// differ), and shows that fields cannot run into each other.
func TestFingerprintEncoding(t *testing.T) {
	fp := New()
	fp.AddString("engine", "terraform 1.11.4")
	fp.Add("args", []byte("a\x00b"))
	want := sha256.Sum256([]byte("engine 16\nterraform 1.11.4args 3\na\x00b"))
	require.Equal(t, hex.EncodeToString(want[:]), fp.Sum())

	sum := func(fields ...string) string {
		fp := New()
		for i := 0; i < len(fields); i += 2 {
			fp.AddString(fields[i], fields[i+1])
		}
		return fp.Sum()
	}
	require.Equal(t, sum("a", "xy", "b", ""), sum("a", "xy", "b", ""), "the same fields, the same sum")
	require.NotEqual(t, sum("a", "xy", "b", ""), sum("a", "x", "b", "y"), "a value never runs into the next field")
	require.NotEqual(t, sum("a", "1", "b", "2"), sum("b", "2", "a", "1"), "the order counts")
	require.NotEqual(t, sum("a", ""), sum(), "an empty field counts")

	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("xy"), 0o644))
	withFile := New()
	withFile.AddFile("a", p)
	require.Equal(t, sum("a", "xy"), withFile.Sum())
	missing := New()
	missing.AddFile("a", filepath.Join(dir, "none"))
	require.Equal(t, sum("a", ""), missing.Sum(), "a missing file counts as empty")
}

// TestParts pins the encoding of a part, and shows that keeping parts
// never changes the digest.
func TestParts(t *testing.T) {
	p := Parts{}
	fp := NewWithParts(p)
	fp.AddPart("env TF_VAR_region", "TF_VAR_region", []byte("eu"))
	fp.Part("engine path", []byte("/bin/tf"))
	fp.AddPart("arg", "TF_VAR_region", []byte("x"))

	plain := New()
	plain.Add("env TF_VAR_region", []byte("eu"))
	plain.Add("arg", []byte("x"))
	require.Equal(t, plain.Sum(), fp.Sum(), "parts never change the digest")

	hexSum := func(b string) string { s := sha256.Sum256([]byte(b)); return hex.EncodeToString(s[:]) }
	require.Equal(t, map[string]string{
		"TF_VAR_region": hexSum("2\neu1\nx"), // a label added twice is one part
		"engine path":   hexSum("7\n/bin/tf"),
	}, p.Sums())

	var none Parts
	NewWithParts(none).AddPart("a", "a", []byte("v"))
	require.Empty(t, none.Sums(), "a nil Parts keeps nothing")
}

func TestChangedParts(t *testing.T) {
	saved := map[string]string{"a": "1", "b": "2", "gone": "3"}
	now := map[string]string{"a": "1", "b": "22", "new": "4"}
	require.Equal(t, []string{"b", "gone (removed)", "new (added)"}, ChangedParts(saved, now))
	require.Empty(t, ChangedParts(saved, saved))
	require.Empty(t, ChangedParts(nil, nil))
}

func TestLabels(t *testing.T) {
	require.Equal(t, "TF_VAR_region", EnvLabel("TF_VAR_region"))
	require.Equal(t, "env TF_CLI_ARGS", EnvLabel("TF_CLI_ARGS"))
	require.Equal(t, "tofu 1.8.0", EngineID(engine.Info{Kind: engine.OpenTofu, Version: version.Must(version.NewVersion("1.8.0"))}))
}
