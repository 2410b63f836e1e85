package backendcfg

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// pinFiles are the configuration files of TestDigestPinned: an HCL
// backend among other blocks, a cloud block in a JSON list and a backend
// in a JSON object.
var pinFiles = []modtree.ConfigFile{
	{Name: "main.tf", Data: []byte("resource \"terraform_data\" \"x\" {}\n\nterraform {\n  required_version = \">= 1.0\"\n  backend \"s3\" {\n    bucket = \"b\"\n    key    = var.key\n  }\n}\n")},
	{Name: "cloud.tf.json", Data: []byte(`{"terraform": [{"cloud": {"organization": "o", "workspaces": {"name": "w"}}}]}`)},
	{Name: "extra.tofu.json", Data: []byte(`{"terraform": {"backend": {"local": {"workspace_dir": "ws", "path": "p.tfstate"}}}}`)},
}

// TestDigestPinned pins the encoding: the digest is in every instance's
// init record on disk, and these values are what the runner wrote before
// the digest moved here. A change to any of them makes every backend
// look changed once.
func TestDigestPinned(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cfg.hcl"), []byte("bucket = \"x\"\n"), 0o644))
	args := []string{"key=v", "cfg.hcl", "missing.hcl"}
	const early = "9ebc706798fbfe336052c957fc2d16e01be58ff6bdddf97fee43691ca6e068ee"

	require.Equal(t, "5967cf8bff5a92763626ba68fa94cbe8efe95411b985aa00807946c0af928bc0", Digest(pinFiles[:1], dir, nil, ""))
	require.Equal(t, "f516efb952a325a8f15c3dcd6ccdb6e5a1f085ef709ba5e757ec2a9a09c42fc2", Digest(pinFiles, dir, args, ""))
	require.Equal(t, "b849d6a5049f0b86459ed4d15d542d8ea62d7d4ffa41221188052a665c946853", Digest(pinFiles, dir, args, early))
	// The memo gives what a parse gives.
	require.Equal(t, "5967cf8bff5a92763626ba68fa94cbe8efe95411b985aa00807946c0af928bc0", Digest(pinFiles[:1], dir, nil, ""))
}

func TestDigestNoBackend(t *testing.T) {
	dir := t.TempDir()
	for name, files := range map[string][]modtree.ConfigFile{
		"no files":          nil,
		"empty terraform":   {{Name: "a.tf", Data: []byte(`terraform {}`)}},
		"backend elsewhere": {{Name: "a.tf", Data: []byte(`backend "s3" {}`)}},
		"does not parse":    {{Name: "a.tf", Data: []byte("terraform {\n  backend \"s3\" {\n")}},
		"json without":      {{Name: "a.tf.json", Data: []byte(`{"terraform": {"required_version": ">= 1.0"}}`)}},
		"json not json":     {{Name: "a.tf.json", Data: []byte(`terraform { backend "s3" {} }`)}},
	} {
		require.Empty(t, Digest(files, dir, []string{"key=v"}, "early"), name)
	}
}

// What counts in the digest and what does not.
func TestDigestChanges(t *testing.T) {
	dir := t.TempDir()
	hcl := func(body string) modtree.ConfigFile {
		return modtree.ConfigFile{Name: "backend.tf", Data: []byte("terraform {\n" + body + "\n}\n")}
	}
	base := []modtree.ConfigFile{hcl(`  backend "local" { path = "a.tfstate" }`), {Name: "main.tf", Data: []byte(`resource "terraform_data" "x" {}`)}}
	d := Digest(base, dir, nil, "")
	require.NotEmpty(t, d)

	same := map[string][]modtree.ConfigFile{
		"another resource": {base[0], {Name: "main.tf", Data: []byte(`resource "terraform_data" "y" {}`)}},
		"a comment and another setting outside the block": {
			hcl("  # state\n  required_version = \">= 1.0\"\n  backend \"local\" { path = \"a.tfstate\" }"), base[1]},
		"the block in another file":             {{Name: "other.tf", Data: base[0].Data}, base[1]},
		"the files in another order":            {base[1], base[0]},
		"a JSON file without a terraform block": {base[0], base[1], {Name: "x.tf.json", Data: []byte(`{"resource": {}}`)}},
	}
	for name, files := range same {
		require.Equal(t, d, Digest(files, dir, nil, ""), name)
	}
	changed := map[string][]modtree.ConfigFile{
		"another path":      {hcl(`  backend "local" { path = "b.tfstate" }`), base[1]},
		"another type":      {hcl(`  backend "pg" {}`), base[1]},
		"a cloud block":     {hcl(`  cloud { organization = "o" }`), base[1]},
		"a second backend":  {base[0], base[1], {Name: "b.tofu.json", Data: []byte(`{"terraform": {"backend": {"local": {"path": "c"}}}}`)}},
		"a cloud in a list": {base[0], base[1], {Name: "b.tf.json", Data: []byte(`{"terraform": [{}, {"cloud": {"organization": "o"}}]}`)}},
	}
	seen := map[string]string{d: "base"}
	for name, files := range changed {
		got := Digest(files, dir, nil, "")
		require.NotContains(t, seen, got, "%s gives the digest of %s", name, seen[got])
		seen[got] = name
	}
	require.NotEqual(t, d, Digest(base, dir, nil, "e1"), "what early evaluation reads")
	require.NotEqual(t, Digest(base, dir, nil, "e1"), Digest(base, dir, nil, "e2"))

	// JSON is taken by its settings, not its spelling.
	j1 := []modtree.ConfigFile{{Name: "b.tf.json", Data: []byte(`{"terraform": {"backend": {"s3": {"key": "k", "bucket": "b"}}}}`)}}
	j2 := []modtree.ConfigFile{{Name: "b.tf.json", Data: []byte("{\"terraform\": [{\"backend\": {\"s3\": {\n\"bucket\": \"b\", \"key\": \"k\"}}}]}")}}
	require.Equal(t, Digest(j1, dir, nil, ""), Digest(j2, dir, nil, ""))
}

// -backend-config: each argument as given, and the content of the file
// it names, relative to dir; "key=value" is a file only when one of that
// name exists.
func TestDigestBackendConfig(t *testing.T) {
	dir := t.TempDir()
	files := []modtree.ConfigFile{{Name: "b.tf", Data: []byte("terraform {\n  backend \"s3\" {}\n}\n")}}
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	none := Digest(files, dir, nil, "")
	kv := Digest(files, dir, []string{"bucket=a"}, "")
	require.NotEqual(t, none, kv)
	require.NotEqual(t, kv, Digest(files, dir, []string{"bucket=b"}, ""))

	write("s3.hcl", `bucket = "a"`)
	a := Digest(files, dir, []string{"s3.hcl"}, "")
	require.Equal(t, a, Digest(files, dir, []string{"s3.hcl"}, ""))
	abs := []string{filepath.Join(dir, "s3.hcl")}
	absA := Digest(files, "/elsewhere", abs, "")
	write("s3.hcl", `bucket = "b"`)
	require.NotEqual(t, a, Digest(files, dir, []string{"s3.hcl"}, ""), "the file's content counts")
	require.NotEqual(t, absA, Digest(files, "/elsewhere", abs, ""), "an absolute path is read as it is")

	// A file named like a key=value argument is read as a file.
	before := Digest(files, dir, []string{"x=y"}, "")
	write("x=y", `bucket = "c"`)
	require.NotEqual(t, before, Digest(files, dir, []string{"x=y"}, ""))

	// Only regular files are read: a directory counts as a missing file.
	missing := Digest(files, dir, []string{"d.hcl"}, "")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d.hcl"), 0o755))
	require.Equal(t, missing, Digest(files, dir, []string{"d.hcl"}, ""))
}

func TestHCLBlocks(t *testing.T) {
	src := "terraform {\n  backend \"s3\" {\n    bucket = \"b\"\n  }\n  cloud {}\n}\nterraform {\n  backend \"pg\" {}\n}\nbackend \"x\" {}\n"
	require.Equal(t, []string{"backend \"s3\" {\n    bucket = \"b\"\n  }", "cloud {}", "backend \"pg\" {}"}, hclBlocks([]byte(src)))
	require.Nil(t, hclBlocks([]byte("terraform {")))
	require.Equal(t, hclBlocks([]byte(src)), hclBlocksOnce([]byte(src)))
	require.Equal(t, hclBlocks([]byte(src)), hclBlocksOnce([]byte(src)), "from the memo")
}

func TestJSONBlocks(t *testing.T) {
	require.Equal(t, []string{`backend {"s3":{"bucket":"b","key":"k"}}`, `cloud {"organization":"o"}`},
		jsonBlocks([]byte(`{"terraform": {"cloud": {"organization": "o"}, "backend": {"s3": {"key": "k", "bucket": "b"}}}}`)))
	require.Equal(t, []string{`backend {"pg":{}}`, `cloud {}`},
		jsonBlocks([]byte(`{"terraform": [{"backend": {"pg": {}}}, {"required_version": "1"}, {"cloud": {}}]}`)))
	for _, src := range []string{``, `[]`, `{"resource": {}}`, `{"terraform": "x"}`} {
		require.Nil(t, jsonBlocks([]byte(src)), src)
	}
}
