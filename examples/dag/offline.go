// This file is the example's offline stand-in and the only one that
// imports the SDK's internal packages: it finds terraform, writes the
// components the example applies and serves a small test provider from a
// loopback registry. Delete it when you copy the example: give main.go
// your terraform (or none: the runner finds it), your component
// directories and your registry (pluginc.Open(dir) alone installs from
// the public one).

package main

import (
	"context"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/pluginc"
)

// offline is what the example gets from its stand-in.
type offline struct {
	terraform    string           // the terraform executable
	vpcSource    string           // the vpc component's directory
	source       string           // the elasticache component's directory
	cacheOptions []pluginc.Option // how the provider cache reaches the registry
	close        func()           // stops the registry
}

// startOffline sets the stand-in up under root, with a provider padded
// by padding bytes.
func startOffline(ctx context.Context, root string, padding int64) (*offline, error) {
	env, err := demo.SetupOffline(ctx, root, padding)
	if err != nil {
		return nil, err
	}
	return &offline{
		terraform: env.Terraform, vpcSource: env.Source(demo.VPCComponent), source: env.Source(demo.Component),
		cacheOptions: env.Provider.CacheOptions(), close: env.Close,
	}, nil
}

// resolveRoot is the -root flag's value made absolute, or, when empty, a
// directory for the example under the user cache dir.
func resolveRoot(flagValue string) (string, error) { return demo.Root(flagValue, "dag") }
