// Package demo is the scenario the examples and bench/ share: the
// elasticache component of the original request, its Redis module, twelve
// (or N) instances of it in stack plat-ue2-dev, a vpc component whose
// outputs the elasticache component can take, and an offline way to serve
// the provider they need: the test provider, built on first use, offered
// by a loopback HTTPS registry and network mirror (SetupOffline does it
// all; Provider.CacheOptions is what a provider cache needs to use it).
// Offline.Compare runs instances the naive way, for the parallel
// example's -compare.
//
// Each example imports this package from one file only, offline.go, the
// stand-in a user deletes when copying the example; the rest of an
// example uses only the SDK's public packages. This package does not link
// package testing, so neither does an example. TestExamplesDoNotLinkTesting
// and TestExamplesImportInternalOnlyInOfflineGo check both.
//
// The Terraform code lives in infra/ and is embedded, so the examples work
// from any directory; WriteInfra lays it out on disk, rewriting only the
// files that differ.
package demo
