// Package engine finds and identifies the program that runs root modules:
// Terraform or OpenTofu.
//
// Find locates a binary of a given Kind. Terraform is looked up on PATH and,
// failing that, a pinned release (TerraformRelease) is installed into a
// directory of the caller's choosing: once across processes (an exclusive
// flock in that directory), unpacked into a temp dir and renamed into place,
// so concurrent callers share one install and a killed install leaves
// nothing a later call would use. OpenTofu is looked up on PATH only; when
// it is missing the error (wrapping ErrNotFound) says how to get it.
//
// Detect runs a binary once (`PATH version`, bounded by DetectTimeout and
// the caller's context, offline, in an empty directory) and reports which
// engine it is, its version and platform. That directory lives in a
// DetectDirPrefix dir of the temp dir whose flock Detect holds while it
// runs, so one that a killed process left can be told apart and removed
// (the runner sweeps them with its own run dirs). It identifies the engine from
// the product name the binary prints, never from its file name, and refuses
// output that names neither engine with ErrUnrecognized. Results are cached
// in-process per binary build (resolved path, size, modification time), so
// a Run that asks for every unit pays for one process.
//
// Kind.RegistryHost and Info.RegistryHost give the host each engine assumes
// for short provider addresses ("hashicorp/aws"). The engines disagree, so
// provider addresses in lock files, mirrors and caches must be expanded
// with the host of the engine that will read them. The hosts come from each
// engine's own address library (terraform-registry-address,
// opentofu/registry-address); this package never spells them.
//
// Every error names its input (the path, the kind) and wraps a sentinel
// from errors.go or the underlying cause, so errors.Is works.
package engine
