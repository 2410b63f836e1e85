// Command planapply plans twelve instances into saved plans, shows what
// each would change, then applies exactly those plans: what was reviewed
// is what gets applied, never a fresh plan. Stack plat-ue2-dev,
// instances elasticache/redis-cluster-1..12 of one component, offline (the
// provider is built on first run and served from a loopback registry).
//
// runner.SavePlan keeps each plan in its instance's workdir and puts its
// path and counts in Result.Plan; runner.ApplyPlan applies that file and
// refuses one whose workdir, lock file or terraform changed since. Run it
// twice: the second time every plan is empty and nothing is applied.
//
// main.go is the part to copy; it uses only the SDK's public packages.
// offline.go is the stand-in that serves a small provider from a loopback
// registry so the example runs with no network: delete it when copying,
// and name your own component and registry.
package main
