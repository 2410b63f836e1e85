package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/demo"
	"github.com/tfisolate/tfisolate/pluginc"
)

// providers writes the infra tree and opens the shared provider cache:
// with -online on the public registry, otherwise on the test provider
// served from a loopback registry (running -compare first). It returns
// the component's directory, the cache and what to call when done.
func providers(ctx context.Context, o *options, say io.Writer, tf string) (string, *pluginc.Cache, func(), error) {
	infra := filepath.Join(o.root, "infra")
	source, err := demo.WriteInfra(infra)
	if err != nil {
		return "", nil, nil, err
	}
	cacheDir := filepath.Join(o.root, "plugin-cache")
	if o.online {
		cache, err := pluginc.Open(cacheDir, pluginc.WithSource(pluginc.Registry()))
		return filepath.Join(infra, filepath.FromSlash(demo.OnlineComponent)), cache, func() {}, err
	}
	prov, err := demo.ServeProvider(filepath.Join(o.root, "provider"), o.padding)
	if err != nil {
		return "", nil, nil, fmt.Errorf("serve the provider locally: %w", err)
	}
	prov.SetThrottle(o.throttle)
	if o.compare {
		if err := compare(ctx, say, o, tf, source, prov); err != nil {
			prov.Close()
			return "", nil, nil, err
		}
	}
	cache, err := prov.OpenCache(cacheDir)
	if err != nil {
		prov.Close()
		return "", nil, nil, err
	}
	return source, cache, prov.Close, nil
}
