package modmanifest

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRebase(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the manifest below uses Unix absolute paths")
	}
	origin, work, dst := filepath.FromSlash("/w/a/data/modules"), filepath.FromSlash("/w/a/src/c"), filepath.FromSlash("/w/b/data/modules")
	in := `{"Modules":[
{"Key":"","Source":"","Dir":"."},
{"Key":"net","Source":"./net","Dir":"net"},
{"Key":"redis","Source":"https://127.0.0.1:1/m.zip","Dir":"/w/a/data/modules/redis","Extra":[1]},
{"Key":"redis.sub","Source":"./sub","Dir":"/w/a/data/modules/redis/sub"},
{"Key":"rel","Source":"https://127.0.0.1:1/r.zip","Dir":"../../data/modules/rel"}]}`
	out, err := Rebase([]byte(in), origin, work, dst)
	require.NoError(t, err)
	recs, err := Parse(out)
	require.NoError(t, err)
	dirs := map[string]string{}
	for _, r := range recs {
		dirs[r.Key] = r.Dir
	}
	require.Equal(t, map[string]string{
		"": ".", "net": "net",
		"redis":     "/w/b/data/modules/redis",
		"redis.sub": "/w/b/data/modules/redis/sub",
		"rel":       "/w/b/data/modules/rel",
	}, dirs)
	var raw struct{ Modules []map[string]json.RawMessage }
	require.NoError(t, json.Unmarshal(out, &raw))
	require.JSONEq(t, `[1]`, string(raw.Modules[2]["Extra"]), "unknown fields are kept")

	reordered := `{"Modules":[
{"Key":"rel","Source":"https://127.0.0.1:1/r.zip","Dir":"/w/b/data/modules/rel"},
{"Key":"redis.sub","Source":"./sub","Dir":"/w/b/data/modules/redis/sub/"},
{"Key":"redis","Source":"https://127.0.0.1:1/m.zip","Dir":"/w/b/data/modules/redis"},
{"Key":"net","Source":"./net","Dir":"net"},
{"Key":"","Source":"","Dir":"."}]}`
	require.True(t, Same(out, []byte(reordered)))
	require.False(t, Same(out, []byte(in)), "Dirs into another data dir differ")
	require.False(t, Same(out, []byte("{")))

	_, err = Rebase([]byte("not json"), origin, work, dst)
	require.ErrorContains(t, err, "parse modules.json")
}

func TestParse(t *testing.T) {
	recs, err := Parse([]byte(`{"Modules":[{"Key":"net","Source":"example.test/acme/net/aws","Version":"1.2.0","Dir":".terraform/modules/net","Extra":true}]}`))
	require.NoError(t, err)
	require.Equal(t, []Record{{Key: "net", Source: "example.test/acme/net/aws", Version: "1.2.0", Dir: ".terraform/modules/net"}}, recs)

	_, err = Parse([]byte("{"))
	require.ErrorContains(t, err, "parse modules.json")
	require.False(t, Same([]byte(`{}`), []byte(`{}`)), "a manifest without a Modules list matches nothing")
}
