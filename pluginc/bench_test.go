package pluginc

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkEnsureWarm measures Ensure for a package already in the cache.
// It must not touch the network, which the registry's counter proves.
func BenchmarkEnsureWarm(b *testing.B) {
	f := startRegistry(b, 0, []string{"1.0.0", "1.1.0"})
	dir := b.TempDir()
	c := f.open(b, dir)
	ctx := context.Background()
	req := Requirement{Provider: f.p, Constraints: "~> 1.0"}
	if _, err := c.Ensure(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.Run("same-cache", func(b *testing.B) {
		before := f.srv.Requests()
		for b.Loop() {
			if _, err := c.Ensure(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		if got := f.srv.Requests(); got != before {
			b.Fatalf("warm Ensure made %d network requests", got-before)
		}
	})
	b.Run("new-process-locked", func(b *testing.B) {
		// What every other process does: open the cache, ask for the locked version.
		before := f.srv.Requests()
		locked := req
		locked.Locked = "1.1.0"
		for b.Loop() {
			c := f.open(b, dir)
			if _, err := c.Ensure(ctx, locked); err != nil {
				b.Fatal(err)
			}
		}
		if got := f.srv.Requests(); got != before {
			b.Fatalf("warm Ensure made %d network requests", got-before)
		}
	})
}

// BenchmarkEnsureCold measures installing into an empty cache with 1 and
// 32 concurrent callers; 32 callers must cost about what 1 does, since
// only one of them downloads.
func BenchmarkEnsureCold(b *testing.B) {
	f := startRegistry(b, 0, []string{"1.0.0", "1.1.0"})
	b.SetBytes(fileSize(b, f.zips["1.1.0"]))
	for _, callers := range []int{1, 32} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			b.SetBytes(fileSize(b, f.zips["1.1.0"]))
			ctx := context.Background()
			req := Requirement{Provider: f.p, Constraints: "~> 1.0"}
			start := f.srv.TotalDownloads()
			n := 0
			for b.Loop() {
				c := f.open(b, b.TempDir())
				var wg sync.WaitGroup
				errs := make([]error, callers)
				for i := range callers {
					wg.Go(func() { _, errs[i] = c.Ensure(ctx, req) })
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				n++
			}
			if got := f.srv.TotalDownloads() - start; got != n {
				b.Fatalf("%d downloads for %d cold installs", got, n)
			}
		})
	}
}
