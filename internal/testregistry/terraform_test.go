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

	"github.com/tfisolate/tfisolate/internal/testenv"
	"github.com/tfisolate/tfisolate/internal/testprovider"
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
