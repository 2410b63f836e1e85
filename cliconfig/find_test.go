package cliconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFind(t *testing.T) {
	write := func(t *testing.T, p, body string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	home := t.TempDir()
	write(t, filepath.Join(home, ".terraformrc"), `credentials "a.example" { token = "rc" }`)
	write(t, filepath.Join(home, ".terraform.d", "credentials.tfrc.json"), `{"credentials": {"b.example": {"token": "login"}}}`)
	write(t, filepath.Join(home, ".terraform.d", "z.tfrc"), `credentials "a.example" { token = "later" }`)

	// terraform: ~/.terraformrc, then the config dir's files in name order.
	f, err := Find("terraform", "", env(map[string]string{"HOME": home}))
	require.NoError(t, err)
	require.Equal(t, "later", f.Credentials["a.example"]["token"])
	require.Equal(t, "login", f.Credentials["b.example"]["token"])

	// TF_CLI_CONFIG_FILE names the one file read.
	named := filepath.Join(t.TempDir(), "named.tfrc")
	write(t, named, `credentials "c.example" { token = "named" }`)
	f, err = Find("terraform", "", env(map[string]string{"HOME": home, "TF_CLI_CONFIG_FILE": named}))
	require.NoError(t, err)
	require.Equal(t, map[string]map[string]any{"c.example": {"token": "named"}}, f.Credentials)

	// A named file that does not exist is no config, as terraform has it.
	f, err = Find("terraform", "", env(map[string]string{"HOME": home, "TF_CLI_CONFIG_FILE": named + ".missing"}))
	require.NoError(t, err)
	require.Nil(t, f)

	// OpenTofu prefers ~/.tofurc and resolves patterns on its own host.
	write(t, filepath.Join(home, ".tofurc"), `credentials "d.example" { token = "tofu" }`)
	f, err = Find("tofu", "tofu.example", env(map[string]string{"HOME": home}))
	require.NoError(t, err)
	require.Equal(t, "tofu", f.Credentials["d.example"]["token"])
	require.NotContains(t, f.Credentials, "c.example")
	require.Equal(t, "tofu.example", f.DefaultRegistryHost)

	// Nothing anywhere: nil.
	f, err = Find("terraform", "", env(map[string]string{"HOME": t.TempDir()}))
	require.NoError(t, err)
	require.Nil(t, f)

	// A file terraform would warn about is left out, named in the error;
	// the others are still read.
	bad := filepath.Join(t.TempDir(), "bad.tfrc")
	write(t, bad, `credentials "x" {`)
	f, err = Find("terraform", "", env(map[string]string{"TF_CLI_CONFIG_FILE": bad}))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, bad)
	require.Nil(t, f)
	f, err = Find("terraform", "", env(map[string]string{"TF_CLI_CONFIG_FILE": t.TempDir()}))
	require.ErrorContains(t, err, "left out", "a directory named as the file")
	require.Nil(t, f)
	home2 := t.TempDir()
	write(t, filepath.Join(home2, ".terraformrc"), `plugin_cache_dir = "/x"`)
	write(t, filepath.Join(home2, ".terraform.d", "broken.tfrc"), `provider_installation { carrier_pigeon {} }`)
	f, err = Find("terraform", "", env(map[string]string{"HOME": home2}))
	require.ErrorContains(t, err, "broken.tfrc")
	require.NotNil(t, f, "the readable file is kept")
}
