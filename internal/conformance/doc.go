// Package conformance holds tests only: it checks the runner against
// plain terraform on configurations this project did not write.
//
// TestTerraformFixturesPlanLikePlainTerraform sweeps the root modules of
// Terraform's own fixtures (its command, end-to-end, module installer and
// config loader testdata, read from the Go module cache at the version of
// the terraform binary under test; nothing of Terraform is copied into
// this repository). Each fixture that
// needs no download is planned on a copy of its own by plain terraform
// (init, plan -out, show -json, with -input=false and a CLI config whose
// only installation method is an empty mirror) and by the runner
// (SavePlan, one Run, each fixture a unit). Guarantees it checks, per
// fixture:
//
//   - the runner plans the same document as plain terraform (its
//     timestamp, the directory terraform ran in and the order of
//     relevant_attributes, which terraform itself varies, aside); where
//     plain terraform stopped only because of the component's own data
//     dir (.terraform, which an instance never reads) and the local state
//     that data dir points at records nothing, the same document as plain
//     terraform without that data dir;
//   - or both fail, and the runner's error carries the summary of every
//     error diagnostic plain terraform printed;
//   - or the runner refuses the fixture because the component holds local
//     state of its own (workdir.ErrSourceState), naming each such file,
//     which is in the component;
//   - and the runner never writes into the component.
//
// A fixture that needs a provider or module download is left out and
// counted; the sweep fails when it compares too few fixtures to mean
// anything, and is skipped (failed under CI=true) when Terraform's source
// cannot be fetched.
package conformance
