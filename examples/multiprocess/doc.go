// Command multiprocess shows tfisolate's guarantees across OS processes:
// several processes (this binary, re-executed as workers) share ONE
// provider cache and ONE workdir root and apply overlapping sets of
// instances at the same time. With the defaults, three processes apply
// elasticache/redis-cluster-1..4, 3..6 and 5..8 of stack plat-ue2-dev.
//
// What it shows:
//   - the provider is downloaded once for all processes (the cache's
//     per-package flock; the others wait for it or find it installed),
//   - an instance two processes share is applied by one at a time (the
//     workdir's instance flock; the other waits, shown as lock wait) and
//     both succeed,
//   - every instance's state holds its resources.
//
// The parent builds the provider on first run and serves it from a loopback
// HTTPS registry; the workers reach it through the address and CA file the
// parent passes them. Each worker hands the parent its runner.Report in the
// runner's documented JSON form (json.Marshal of the report), which -json
// prints inside the outcome.
//
// main.go, run.go and worker.go use only the SDK's public packages.
// offline.go is the stand-in that serves a small provider from a loopback
// registry so the example runs with no network: delete it when copying,
// and name your own component and registry.
package main
