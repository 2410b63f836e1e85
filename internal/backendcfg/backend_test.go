package backendcfg

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

func TestRecorded(t *testing.T) {
	dataDir := t.TempDir()
	require.Equal(t, Backend{}, Recorded(dataDir), "no record: the default local backend")

	write := func(s string) {
		require.NoError(t, os.WriteFile(filepath.Join(dataDir, "terraform.tfstate"), []byte(s), 0o600))
	}
	// As terraform writes it after init with a backend.
	write(`{"version": 3, "serial": 1, "backend": {"type": "s3", "config": {"bucket": "b", "key": "k", "access_key": "secret"}, "hash": 1}}`)
	b := Recorded(dataDir)
	require.Equal(t, "s3", b.Type)
	require.False(t, b.Local())
	require.Equal(t, `"s3" (bucket=b, key=k)`, b.String(), "no credentials")

	for _, s := range []string{`{"version": 3}`, `not json`, `{"backend": null}`} {
		write(s)
		require.Equal(t, Backend{}, Recorded(dataDir), s)
	}
}

func TestConfigured(t *testing.T) {
	file := func(name, s string) modtree.ConfigFile { return modtree.ConfigFile{Name: name, Data: []byte(s)} }
	for _, tc := range []struct {
		name  string
		files []modtree.ConfigFile
		want  string
	}{
		{"none", []modtree.ConfigFile{file("main.tf", `resource "terraform_data" "x" {}`)}, `"local"`},
		{"literal", []modtree.ConfigFile{file("b.tf", "terraform {\n  backend \"local\" {\n    path = \"a.tfstate\"\n  }\n}")}, `"local" (path=a.tfstate)`},
		{"expression", []modtree.ConfigFile{file("b.tofu", "terraform {\n  backend \"local\" {\n    path = \"${var.dir}/x.tfstate\"\n    workspace_dir = local.ws\n  }\n}")},
			`"local" (path="${var.dir}/x.tfstate", workspace_dir=local.ws)`},
		{"json object", []modtree.ConfigFile{file("b.tf.json", `{"terraform": {"backend": {"s3": {"bucket": "b", "region": "r"}}}}`)}, `"s3" (bucket=b, region=r)`},
		{"json list, first type by name", []modtree.ConfigFile{file("b.tofu.json", `{"terraform": [{}, {"backend": {"s3": {}, "pg": {"schema_name": "s"}}}]}`)}, `"pg" (schema_name=s)`},
		{"first file wins", []modtree.ConfigFile{file("a.tf", "terraform {\n  backend \"pg\" {}\n}"), file("b.tf", "terraform {\n  backend \"s3\" {}\n}")}, `"pg"`},
		{"unparsable passed over", []modtree.ConfigFile{file("a.tf", "terraform {"), file("b.tf.json", "{"), file("c.tf", "terraform {\n  backend \"s3\" {}\n}")}, `"s3"`},
		{"cloud not read", []modtree.ConfigFile{file("a.tf", "terraform {\n  cloud {\n    organization = \"o\"\n  }\n}")}, `"local"`},
	} {
		require.Equal(t, tc.want, Configured(tc.files).String(), tc.name)
	}
}

func TestString(t *testing.T) {
	b := Backend{Type: "http", settings: map[string]any{
		"address":  "https://user:pw@state.example.invalid/x?token=t",
		"password": "pw",
		"username": "user",
	}}
	require.Equal(t, `"http" (address=https://state.example.invalid/x)`, b.String())
	// Settings in a fixed order, empty and non-string ones left out.
	b = Backend{Type: "s3", settings: map[string]any{"region": "r", "key": "k", "bucket": "b", "prefix": "", "encrypt": true}}
	require.Equal(t, `"s3" (bucket=b, key=k, region=r)`, b.String())
	require.Equal(t, `"local"`, Backend{}.String())
}

func TestLocalStatePath(t *testing.T) {
	for _, tc := range []struct {
		settings map[string]any
		ws, want string
	}{
		{nil, "default", "/m/terraform.tfstate"},
		{nil, "blue", "/m/terraform.tfstate.d/blue/terraform.tfstate"},
		{map[string]any{"path": "s/a.tfstate", "workspace_dir": "wss"}, "default", "/m/s/a.tfstate"},
		{map[string]any{"path": "s/a.tfstate", "workspace_dir": "wss"}, "blue", "/m/wss/blue/terraform.tfstate"},
		{map[string]any{"path": "/abs/a.tfstate", "workspace_dir": "/abs/ws"}, "default", "/abs/a.tfstate"},
		{map[string]any{"path": "/abs/a.tfstate", "workspace_dir": "/abs/ws"}, "blue", "/abs/ws/blue/terraform.tfstate"},
		{map[string]any{"path": ""}, "default", "/m/terraform.tfstate"},
	} {
		require.Equal(t, tc.want, Backend{Type: "local", settings: tc.settings}.LocalStatePath("/m", tc.ws), "%v %s", tc.settings, tc.ws)
	}
	require.True(t, Backend{}.Local())
	require.True(t, Backend{Type: "local"}.Local())
	require.False(t, Backend{Type: "pg"}.Local())
}
