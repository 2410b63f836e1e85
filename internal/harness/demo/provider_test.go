package demo

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeProviderCAIsItsOwn: two servers built from one shared dir at
// once (two benches, a bench beside the tests) each hand terraform a CA
// that verifies their own certificate, and closing one leaves the
// other's in place.
func TestServeProviderCAIsItsOwn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "provider")
	a, err := ServeProvider(dir, 0)
	require.NoError(t, err)
	b, err := ServeProvider(dir, 0)
	require.NoError(t, err)
	defer b.Close()

	caOf := func(p *Provider) string {
		env := p.TerraformEnv()
		require.Len(t, env, 1)
		return strings.TrimPrefix(env[0], "SSL_CERT_FILE=")
	}
	dial := func(p *Provider) error {
		pem, err := os.ReadFile(caOf(p))
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(pem))
		conn, err := tls.Dial("tcp", p.Addr(), &tls.Config{RootCAs: pool, ServerName: p.Host()})
		if err != nil {
			return err
		}
		return conn.Close()
	}
	require.NotEqual(t, caOf(a), caOf(b))
	require.NoError(t, dial(a), "the first server's CA after a second server started from the same dir")
	require.NoError(t, dial(b))
	a.Close()
	require.NoFileExists(t, caOf(a))
	require.NoError(t, dial(b), "the second server's CA after the first closed")
}
