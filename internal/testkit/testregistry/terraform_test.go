package testregistry

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// TestTerraformNetworkMirror: real terraform installs the test provider
// from the server's network mirror over loopback HTTPS, trusting the CA
// through SSL_CERT_FILE and checking the mirror's hashes.
func TestTerraformNetworkMirror(t *testing.T) {
	tfBin := testenv.Terraform(t)
	bin := testprovider.Build(t)
	s := Start(t)
	require.NoError(t, s.AddFile(testprovider.Namespace, testprovider.Type, "1.0.0", testprovider.Platform, bin.Zip(t, "1.0.0")))
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, s.WriteCAFile(ca))
	cfg := filepath.Join(t.TempDir(), "terraform.rc")
	require.NoError(t, os.WriteFile(cfg, []byte(`provider_installation {
  network_mirror {
    url     = "`+s.LoopbackURL()+`"
    include = ["`+testprovider.Source+`"]
  }
}
`), 0o644))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  required_providers {
    tfitest = { source = "`+testprovider.Source+`" }
  }
}
`), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tfBin, "init", "-input=false", "-no-color")
	cmd.Dir = dir
	cmd.Env = append(testenv.TerraformEnv(cfg), "SSL_CERT_FILE="+ca)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), out.String())
	require.Equal(t, 1, s.Downloads(testprovider.Namespace+"/"+testprovider.Type+"/1.0.0/"+testprovider.Platform))
	_, err := os.Stat(filepath.Join(dir, ".terraform", "providers", testprovider.Source, "1.0.0", testprovider.Platform, testprovider.ExecutableName("1.0.0")))
	require.NoError(t, err)
}

// TestTerraformModuleRegistry: real terraform finds a module on the
// registry's host name (through the CLI config's host block), picks the
// newest version its constraint allows, and unpacks the archive, tar.gz
// or zip; after a newer version is published, get -update takes it.
func TestTerraformModuleRegistry(t *testing.T) {
	tfBin := testenv.Terraform(t)
	for _, f := range []ArchiveFormat{TarGz, Zip} {
		t.Run(string(f), func(t *testing.T) {
			s := Start(t)
			s.SetModuleArchive(f)
			require.NoError(t, s.AddModule("tfisolate", "greet", "tfitest", "1.0.0", map[string]string{"main.tf": `output "version" { value = "1.0.0" }`}))
			ca := filepath.Join(t.TempDir(), "ca.pem")
			require.NoError(t, s.WriteCAFile(ca))
			cfg := filepath.Join(t.TempDir(), "terraform.rc")
			require.NoError(t, os.WriteFile(cfg, []byte(s.ModuleServices()), 0o644))
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`module "greet" {
  source  = "`+s.ModuleSource("tfisolate", "greet", "tfitest")+`"
  version = ">= 1.0.0"
}
`), 0o644))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			get := func(args ...string) {
				cmd := exec.CommandContext(ctx, tfBin, append([]string{"get", "-no-color"}, args...)...)
				cmd.Dir = dir
				cmd.Env = append(testenv.TerraformEnv(cfg), "SSL_CERT_FILE="+ca)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				require.NoError(t, cmd.Run(), out.String())
			}
			get()
			installed := filepath.Join(dir, ".terraform", "modules", "greet", "main.tf")
			require.FileExists(t, installed)
			b, err := os.ReadFile(installed)
			require.NoError(t, err)
			require.Contains(t, string(b), `"1.0.0"`)

			require.NoError(t, s.AddModule("tfisolate", "greet", "tfitest", "1.1.0", map[string]string{"main.tf": `output "version" { value = "1.1.0" }`}))
			get("-update")
			b, err = os.ReadFile(installed)
			require.NoError(t, err)
			require.Contains(t, string(b), `"1.1.0"`)
			require.Equal(t, 1, s.ModuleDownloads(ModuleKey("tfisolate", "greet", "tfitest", "1.0.0")))
			require.Equal(t, 1, s.ModuleDownloads(ModuleKey("tfisolate", "greet", "tfitest", "1.1.0")))
		})
	}
}
