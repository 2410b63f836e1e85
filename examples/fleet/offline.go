// This file is the example's offline stand-in and the only one that
// imports the SDK's internal packages: it finds terraform, writes the
// components the fleet applies, serves a small test provider from a
// loopback registry (the mirror's upstream, reached through its address
// and CA file) and makes up a certificate for the fleet's mirror, which
// the machines then trust. Delete it when you copy the example: give
// each machine your terraform (or none: the runner finds it) and your
// checkout's component directories, the mirror your registry
// (pluginc.Open(dir) alone installs from the public one) and your
// certificate.

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/tfisolate/tfisolate/internal/demo"
	"github.com/tfisolate/tfisolate/internal/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
)

// offline is what every machine gets from the stand-in; the parent hands
// it to the apply jobs as JSON.
type offline struct {
	Terraform string `json:"terraform"`  // the terraform executable
	VPCSource string `json:"vpc_source"` // the vpc component's directory
	Source    string `json:"source"`     // the elasticache component's directory
	Registry  struct {
		Host   string `json:"host"`    // its host name
		Addr   string `json:"addr"`    // the loopback address it listens on
		CAFile string `json:"ca_file"` // its certificate authority
	} `json:"registry"`

	downloads func() int // packages the registry served (the parent's only)
	close     func()     // stops the registry (the parent's only)
}

// startOffline sets the stand-in up under root.
func startOffline(ctx context.Context, root string) (*offline, error) {
	env, err := demo.SetupOffline(ctx, root, 0)
	if err != nil {
		return nil, err
	}
	o := &offline{Terraform: env.Terraform, VPCSource: env.Source(demo.VPCComponent), Source: env.Source(demo.Component),
		downloads: env.Provider.Downloads, close: env.Close}
	o.Registry.Host, o.Registry.Addr = env.Provider.Host(), env.Provider.Addr()
	o.Registry.CAFile = filepath.Join(root, "registry-ca.pem")
	if err := env.Provider.WriteCAFile(o.Registry.CAFile); err != nil {
		env.Close()
		return nil, err
	}
	return o, nil
}

// cacheOptions are a machine's provider cache options for the registry:
// its protocol, and a client that trusts its CA and dials it on loopback.
func (o *offline) cacheOptions() ([]pluginc.Option, error) {
	ca, err := os.ReadFile(o.Registry.CAFile)
	if err != nil {
		return nil, fmt.Errorf("registry CA: %w", err)
	}
	hc, err := testregistry.NewClient(o.Registry.Host, o.Registry.Addr, ca)
	if err != nil {
		return nil, err
	}
	return []pluginc.Option{pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(hc)}, nil
}

// serveTLS serves h on loopback over TLS with a certificate made up for
// it, written to certFile for the machines to trust, and returns its URL.
// Yours: an http.Server with your own certificate.
func serveTLS(h http.Handler, certFile string) (url string, stop func(), err error) {
	srv := httptest.NewTLSServer(h)
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(certFile, cert, 0o644); err != nil {
		srv.Close()
		return "", nil, err
	}
	return srv.URL + "/", srv.Close, nil
}

// mirrorOptions are a machine's provider cache options for the fleet's
// mirror at url: its protocol, and a client that trusts the certificate
// in certFile. Yours: pluginc.WithSource(pluginc.NetworkMirror(url)).
func mirrorOptions(url, certFile string) ([]pluginc.Option, error) {
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("mirror certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cert) {
		return nil, fmt.Errorf("no certificate in %s", certFile)
	}
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DialContext:     (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	}}
	return []pluginc.Option{pluginc.WithSource(pluginc.NetworkMirror(url)), pluginc.WithHTTPClient(hc)}, nil
}

// resolveRoot is the -root flag's value made absolute, or, when empty, a
// directory for the example under the user cache dir.
func resolveRoot(flagValue string) (string, error) { return demo.Root(flagValue, "fleet") }
