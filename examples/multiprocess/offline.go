// This file is the example's offline stand-in and the only one that
// imports the SDK's internal packages: it finds terraform, writes the
// component the example applies and serves a small test provider from a
// loopback registry that the workers reach through its address and CA
// file. Delete it when you copy the example: give the workers your
// terraform (or none: the runner finds it), your component directory and
// your registry (pluginc.Open(dir) alone installs from the public one).

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
)

// offline is what the parent gets from its stand-in.
type offline struct {
	terraform string         // the terraform executable
	source    string         // the component's directory
	registry  registryAccess // how a worker reaches the registry
	downloads func() int     // packages the registry has served
	close     func()         // stops the registry
}

// registryAccess is what a worker needs to reach the loopback registry:
// its host name, the loopback address it listens on and its CA.
type registryAccess struct {
	Host   string `json:"host"`
	Addr   string `json:"addr"`
	CAFile string `json:"ca_file"`
}

// startOffline sets the stand-in up under root, with a provider padded
// by padding bytes.
func startOffline(ctx context.Context, root string, padding int64) (*offline, error) {
	tf, err := demo.Terraform(ctx, root)
	if err != nil {
		return nil, err
	}
	source, err := demo.WriteInfra(filepath.Join(root, "infra"))
	if err != nil {
		return nil, err
	}
	prov, err := demo.ServeProvider(filepath.Join(root, "provider"), padding)
	if err != nil {
		return nil, fmt.Errorf("serve the provider locally: %w", err)
	}
	caFile := filepath.Join(root, "registry-ca.pem")
	if err := prov.WriteCAFile(caFile); err != nil {
		prov.Close()
		return nil, err
	}
	return &offline{
		terraform: tf, source: source,
		registry:  registryAccess{Host: prov.Host(), Addr: prov.Addr(), CAFile: caFile},
		downloads: prov.Downloads, close: prov.Close,
	}, nil
}

// cacheOptions are a worker's provider cache options for the registry:
// its protocol, and a client that trusts its CA and dials it on loopback.
func (a registryAccess) cacheOptions() ([]pluginc.Option, error) {
	ca, err := os.ReadFile(a.CAFile)
	if err != nil {
		return nil, fmt.Errorf("registry CA: %w", err)
	}
	hc, err := testregistry.NewClient(a.Host, a.Addr, ca)
	if err != nil {
		return nil, err
	}
	return []pluginc.Option{pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(hc)}, nil
}

// resolveRoot is the -root flag's value made absolute, or, when empty, a
// directory for the example under the user cache dir.
func resolveRoot(flagValue string) (string, error) { return demo.Root(flagValue, "multiprocess") }
