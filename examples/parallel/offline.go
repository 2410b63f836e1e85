// This file is the example's offline stand-in and the only one that
// imports the SDK's internal packages: it finds terraform, writes the
// component the example applies and serves a small test provider from a
// loopback registry. Delete it when you copy the example: give main.go
// your terraform (or none: the runner finds it), your component directory
// and your registry (pluginc.Open(dir) alone installs from the public one).

package main

import (
	"context"
	"io"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/pluginc"
)

// offline is what the example gets from its stand-in.
type offline struct {
	terraform    string           // the terraform executable
	source       string           // the component's directory
	cacheOptions []pluginc.Option // how the provider cache reaches the registry
	close        func()           // stops the registry
}

// startOffline sets the stand-in up under o.root. With -online the
// component takes its provider from the public registry instead; with
// -compare the instances first run the naive way, printing to say.
func startOffline(ctx context.Context, o *options, say io.Writer) (*offline, error) {
	if o.online {
		tf, err := demo.Terraform(ctx, o.root)
		if err != nil {
			return nil, err
		}
		infra := filepath.Join(o.root, "infra")
		if _, err := demo.WriteInfra(infra); err != nil {
			return nil, err
		}
		source := filepath.Join(infra, filepath.FromSlash(demo.OnlineComponent))
		return &offline{terraform: tf, source: source, close: func() {}}, nil
	}
	env, err := demo.SetupOffline(ctx, o.root, o.padding)
	if err != nil {
		return nil, err
	}
	env.Provider.SetThrottle(o.throttle)
	if o.compare {
		if err := env.Compare(ctx, say, o.command.String(), o.n, o.latency); err != nil {
			env.Close()
			return nil, err
		}
	}
	return &offline{terraform: env.Terraform, source: env.Source(demo.Component), cacheOptions: env.Provider.CacheOptions(), close: env.Close}, nil
}

// resolveRoot is the -root flag's value made absolute, or, when empty, a
// directory for the example under the user cache dir.
func resolveRoot(flagValue string) (string, error) { return demo.Root(flagValue, "parallel") }
