// Package demo is the scenario the examples and bench/ share: the
// elasticache component of the original request, its Redis module, twelve
// (or N) instances of it in stack plat-ue2-dev, a vpc component whose
// outputs the elasticache component can take, and an offline way to serve
// the provider they need: the test provider, built on first use, offered
// by a loopback HTTPS registry and network mirror (SetupOffline does it
// all).
//
// The Terraform code lives in infra/ and is embedded, so the examples work
// from any directory; WriteInfra lays it out on disk, rewriting only the
// files that differ.
package demo
