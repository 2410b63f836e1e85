// Package testenv holds helpers shared by the SDK's tests: finding
// terraform, building OpenTofu, fetching another project's Go module
// (ModuleDir), running a scenario under both engines, and giving the
// engine an environment that never reaches outside this machine.
//
// Guarantees: a test that needs an engine either gets a path to a working
// binary or is skipped with a message saying why and how to get one, except
// under CI=true, where a missing engine fails the test so CI cannot pass by
// skipping everything. Tofu builds OpenTofu (TofuVersion) from its Go module
// at most once per machine: concurrent test binaries wait on one flock, the
// binary is published by a rename only after it reported the right version,
// and the build has a deadline (TofuBuildTimeout). Engines runs a scenario
// once per engine as named sub-tests. TerraformEnv never passes on the
// user's CLI config, data dir, plugin cache, workspace or log settings.
package testenv
