// Package testenv holds helpers shared by the SDK's tests: finding terraform
// and giving it an environment that never reaches outside this machine.
//
// Guarantees: a test that needs terraform either gets a path to a working
// binary or is skipped with a message saying how to get one, except under
// CI=true, where a missing terraform fails the test so CI cannot pass by
// skipping everything. TerraformEnv never passes on the user's CLI config,
// data dir, plugin cache, workspace or log settings.
package testenv
