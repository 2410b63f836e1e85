// Package demo is the scenario the examples and bench/ share: the
// elasticache component of the original request, its Redis module, twelve
// (or N) instances of it in stack plat-ue2-dev, and an offline way to serve
// the provider it needs: the test provider, built on first use, offered by a
// loopback HTTPS registry and network mirror.
//
// The Terraform code lives in infra/ and is embedded, so the examples work
// from any directory; WriteInfra lays it out on disk.
package demo
