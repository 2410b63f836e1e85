package demo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
)

// Versions are the provider versions the demo registry offers; the
// component's "~> 1.0" selects the newest.
var Versions = []string{"1.0.0", "1.1.0"}

// Provider is the test provider served on loopback.
type Provider struct {
	*testregistry.Server
	// Binary is the provider executable every version is packed from.
	Binary *testprovider.Binary
	caFile string
}

// ServeProvider builds the test provider into dir (once: a complete build
// there is reused), packs it as every version in Versions for this
// platform, padded by padding bytes, and serves it from a loopback
// registry. Close the returned Provider when done.
func ServeProvider(dir string, padding int64, opts ...testregistry.Option) (*Provider, error) {
	bin, err := testprovider.BuildTo(filepath.Join(dir, "build"), testprovider.WithPadding(padding))
	if err != nil {
		return nil, err
	}
	srv, err := testregistry.New(opts...)
	if err != nil {
		return nil, err
	}
	p := &Provider{Server: srv, Binary: bin}
	for _, v := range Versions {
		var zip bytes.Buffer
		if err := testprovider.PackageZip(&zip, bin.Path, v); err != nil {
			srv.Close()
			return nil, err
		}
		pkg := testregistry.Package{Namespace: testprovider.Namespace, Type: testprovider.Type, Version: v, Platform: testprovider.Platform, Zip: zip.Bytes()}
		if err := srv.Add(pkg); err != nil {
			srv.Close()
			return nil, err
		}
	}
	// The CA is this server's alone: the build dir may be shared by
	// processes serving at once (two benches, a bench beside the tests),
	// and one's CA written over another's makes terraform distrust it.
	caDir, err := os.MkdirTemp("", "tfisolate-demo-ca-")
	if err != nil {
		srv.Close()
		return nil, err
	}
	p.caFile = filepath.Join(caDir, "ca.pem")
	if err := srv.WriteCAFile(p.caFile); err != nil {
		srv.Close()
		_ = os.RemoveAll(caDir)
		return nil, err
	}
	return p, nil
}

// OpenCache opens the shared provider cache at dir with the demo registry
// as its only source.
func (p *Provider) OpenCache(dir string) (*pluginc.Cache, error) {
	return pluginc.Open(dir, p.CacheOptions()...)
}

// CacheOptions are the options of a provider cache (pluginc.Open) that
// installs from the demo registry only: the registry protocol, and a
// client that trusts the registry's certificate and dials it on loopback.
// They are what an example replaces with its user's own registry.
func (p *Provider) CacheOptions() []pluginc.Option {
	return []pluginc.Option{pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(p.HTTPClient())}
}

// TerraformCLIConfig is a CLI config under which terraform itself installs
// the provider from the demo's network mirror, reached by IP: what a user
// without tfisolate would configure.
func (p *Provider) TerraformCLIConfig() []byte {
	return fmt.Appendf(nil, `provider_installation {
  network_mirror {
    url     = "https://%s/"
    include = [%q]
  }
  direct {
    exclude = [%q]
  }
}
`, p.Addr(), testprovider.Host+"/*/*", testprovider.Host+"/*/*")
}

// TerraformEnv is what terraform needs, on top of the process environment,
// to trust the demo registry's certificate.
func (p *Provider) TerraformEnv() []string {
	return []string{"SSL_CERT_FILE=" + p.caFile}
}

// Downloads is how many provider packages the registry has served.
func (p *Provider) Downloads() int { return p.TotalDownloads() }

// Close stops the registry.
func (p *Provider) Close() {
	p.Server.Close()
	_ = os.RemoveAll(filepath.Dir(p.caFile))
}
