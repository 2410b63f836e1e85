// Package conformance holds tests only: it checks the runner against
// the plain engine on configurations this project did not write, under
// every engine of the matrix (testenv.Engines: Terraform 1.11.4 and
// 1.16.0, OpenTofu 1.10.6 and 1.12.6).
//
// TestTerraformFixturesPlanLikePlainTerraform sweeps the root modules of
// each engine's own fixtures (its command, end-to-end, module installer
// and config loader testdata, read from the Go module cache at the
// version of the binary under test: Terraform's for terraform, OpenTofu's
// for tofu; nothing of either is copied into this repository). Each
// fixture that
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
// counted (also one that plain terraform got further with only on the
// modules its own .terraform holds); where the plain engine crashed (a
// bug of that release), the runner must report that crash. The sweep
// fails when it compares too few fixtures to mean anything, and is
// skipped (failed under CI=true) when the engine's source cannot be
// fetched.
//
// TestEarlyEvaluationFixtures does the same, plan and then apply, for
// each engine's fixtures of module sources and versions built from
// variables (Terraform's dynamic-module-sources, 1.15; OpenTofu's
// init-module-variable-*, 1.8), with the values the engine's own tests
// give them, under every engine of the matrix that evaluates them.
package conformance
