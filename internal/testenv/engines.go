package testenv

import (
	"testing"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// Engine is one engine binary a scenario runs under.
type Engine struct {
	Kind engine.Kind // engine.Terraform or engine.OpenTofu
	Path string      // absolute path of the binary
}

// Binary returns the path of a binary of the given engine: Terraform(tb) or
// Tofu(tb), with their skip rules. An unknown kind fails the test.
func Binary(tb testing.TB, kind engine.Kind) string {
	tb.Helper()
	switch kind {
	case engine.Terraform:
		return Terraform(tb)
	case engine.OpenTofu:
		return Tofu(tb)
	}
	tb.Fatalf("testenv: no binary for engine %q", string(kind))
	return ""
}

// Engines runs fn as one sub-test per engine, named "terraform" and "tofu",
// in that order. Each sub-test finds its binary itself, so an engine that
// is unavailable skips (or, under CI=true, fails) only its own sub-test.
// fn may call t.Parallel.
func Engines(t *testing.T, fn func(t *testing.T, e Engine)) {
	t.Helper()
	for _, k := range []engine.Kind{engine.Terraform, engine.OpenTofu} {
		t.Run(string(k), func(t *testing.T) {
			fn(t, Engine{Kind: k, Path: Binary(t, k)})
		})
	}
}
