// Command fleet is a CI fleet simulated on one machine, offline: stack
// plat-ue2-dev, a VPC and twelve clusters (elasticache/redis-cluster-1..12)
// ordered after it.
//
//   - The provider mirror, a process of its own, serves its provider cache
//     to the fleet (pluginc's MirrorHandler) and its module store
//     (runner.ModuleServer, under /modules/): it is the only machine that
//     downloads the provider and the VPC's registry module from
//     upstream; every other machine's cache installs from it, and every
//     machine's terraform get goes through it (runner.WithModuleServer).
//   - The plan job, on machine A (its own workdir root and provider
//     cache), saves every unit's plan, exports the plans as plan bundles
//     (runner.ExportPlan, with an HMAC key) and splits the apply into
//     waves and jobs (Order, then runner.FanOut with 3 jobs a wave); the
//     FanOutPlan's JSON is the CI matrix.
//   - The bundles travel as an artifact (a copy into another directory).
//   - Each wave's apply jobs run at once, each a process of its own with
//     its own root: it imports its matrix cell's bundles
//     (runner.ImportPlan, WithIDs) and applies exactly those plans
//     (runner.ApplyPlan).
//   - Every state lives in one backend every machine reaches (terraform's
//     http backend on a loopback server here, standing in for S3 or
//     another remote backend; ExportPlan refuses a unit whose state is
//     local to the machine): run the fleet again and machine A, which
//     applied nothing, plans no change.
//
// A cluster needs nothing of the VPC's apply to be planned. A unit whose
// plan reads a dependency's outputs can only be planned once that
// dependency is applied: plan it in a later plan job.
//
// main.go is what each machine runs, the part to copy; it uses only the
// SDK's public packages. ci.go stands in for the CI system: it starts the
// machines as processes of this binary (re-executed with their orders in
// the environment), carries the artifact and runs the matrix. offline.go
// stands in for the network: a small provider and module served from a
// loopback registry as the mirror's upstream, a certificate made up for
// the mirror, and the state backend. Delete both when copying.
package main
