package modtree

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

func TestReadBackend(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		overlay map[string][]byte
		want    Backend // File is checked by base name
		state   string
		wsDir   string
	}{
		{"none", map[string]string{"main.tf": `resource "terraform_data" "x" {}`}, nil,
			Backend{}, "terraform.tfstate", "terraform.tfstate.d"},
		{"local defaults", map[string]string{"backend.tf": "terraform {\n  backend \"local\" {}\n}"}, nil,
			Backend{Type: "local", File: "backend.tf"}, "terraform.tfstate", "terraform.tfstate.d"},
		{"local path in hcl", map[string]string{"backend.tf": `terraform {
  backend "local" {
    path          = "state/terraform.tfstate"
    workspace_dir = "ws"
  }
}`}, nil, Backend{Type: "local", Path: "state/terraform.tfstate", WorkspaceDir: "ws", File: "backend.tf"}, "state/terraform.tfstate", "ws"},
		{"local path in json", map[string]string{"backend.tf.json": `{"terraform": {"backend": {"local": {"path": "prod.tfstate"}}}}`}, nil,
			Backend{Type: "local", Path: "prod.tfstate", File: "backend.tf.json"}, "prod.tfstate", "terraform.tfstate.d"},
		{"overlay adds", map[string]string{"main.tf": `# nothing`}, map[string][]byte{
			"backend.tf.json": []byte(`{"terraform": {"backend": {"local": {"path": "gen.tfstate"}}}}`),
			"sub/ignored.tf":  []byte("terraform {\n  backend \"s3\" {}\n}"),
		}, Backend{Type: "local", Path: "gen.tfstate", File: "backend.tf.json"}, "gen.tfstate", "terraform.tfstate.d"},
		{"overlay replaces", map[string]string{"backend.tf": "terraform {\n  backend \"s3\" {}\n}"}, map[string][]byte{
			"backend.tf": []byte("terraform {\n  backend \"local\" {\n    path = \"x.tfstate\"\n  }\n}"),
		}, Backend{Type: "local", Path: "x.tfstate", File: "backend.tf"}, "x.tfstate", "terraform.tfstate.d"},
		{"override wins", map[string]string{
			"backend.tf":  "terraform {\n  backend \"local\" {\n    path = \"a.tfstate\"\n  }\n}",
			"override.tf": "terraform {\n  backend \"local\" {\n    path = \"b.tfstate\"\n  }\n}",
		}, nil, Backend{Type: "local", Path: "b.tfstate", File: "override.tf"}, "b.tfstate", "terraform.tfstate.d"},
		{"s3", map[string]string{"backend.tf": "terraform {\n  backend \"s3\" {\n    bucket = \"b\"\n  }\n}"}, nil,
			Backend{Type: "s3", File: "backend.tf"}, "", ""},
		{"cloud", map[string]string{"main.tf": "terraform {\n  cloud {\n    organization = \"o\"\n  }\n}"}, nil,
			Backend{Type: "cloud", File: "main.tf"}, "", ""},
		{"hidden and broken files ignored", map[string]string{
			".hidden.tf": "terraform {\n  backend \"s3\" {}\n}",
			"broken.tf":  `terraform { backend "s3" {`,
			"main.tf":    "terraform {\n  backend \"local\" {\n    path = \"ok.tfstate\"\n  }\n}",
		}, nil, Backend{Type: "local", Path: "ok.tfstate", File: "main.tf"}, "ok.tfstate", "terraform.tfstate.d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			testenv.WriteTree(t, dir, tc.files)
			got, err := ReadBackend(dir, tc.overlay, TerraformFiles)
			require.NoError(t, err)
			if tc.want.File != "" {
				tc.want.File = filepath.Join(dir, tc.want.File)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.state, got.StatePath())
			require.Equal(t, tc.wsDir, got.StateWorkspaceDir())
		})
	}
}

func TestReadBackendRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		names string
	}{
		{"two primaries", map[string]string{
			"a.tf": "terraform {\n  backend \"local\" {}\n}",
			"b.tf": "terraform {\n  backend \"s3\" {}\n}",
		}, "b.tf"},
		{"two in one file", map[string]string{"a.tf": `terraform {
  backend "local" {}
  cloud {}
}`}, "a.tf"},
		{"not literal", map[string]string{"a.tf": "terraform {\n  backend \"local\" {\n    path = var.p\n  }\n}"}, "a.tf"},
		{"not a string", map[string]string{"a.tf.json": `{"terraform": {"backend": {"local": {"path": 3}}}}`}, "a.tf.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			testenv.WriteTree(t, dir, tc.files)
			_, err := ReadBackend(dir, nil, TerraformFiles)
			require.ErrorIs(t, err, ErrBackend)
			require.Contains(t, err.Error(), tc.names)
		})
	}
	_, err := ReadBackend(filepath.Join(t.TempDir(), "missing"), nil, TerraformFiles)
	require.Error(t, err)
}
