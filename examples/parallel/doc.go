// Command parallel is tfisolate's main job: twelve instances
// elasticache/redis-cluster-1..12 of one component in stack plat-ue2-dev,
// applied in parallel, each in its own workdir, all sharing one provider
// cache. -compare first runs the instances the naive way (one shared dir,
// Terraform's plugin cache); -command destroy cleans up. Ctrl-C climbs the
// stop ladder (ladder.go): drain, interrupt terraform, kill it.
//
// main.go is the part to copy; it uses only the SDK's public packages.
// offline.go is the stand-in that serves a small provider from a loopback
// registry so the example runs with no network: delete it when copying,
// and name your own component and registry.
package main
