package testenv

import (
	"slices"
	"testing"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// Engine is one engine binary a scenario runs under.
type Engine struct {
	Kind engine.Kind // engine.Terraform or engine.OpenTofu
	Path string      // absolute path of the binary
	// Name is the engine's name in the matrix and its sub-test's name:
	// "terraform" (the one on PATH, the oldest Terraform), "tofu"
	// (TofuVersion, the oldest OpenTofu), or a Build's Name for the
	// newest releases ("terraform-1.16.0", "tofu-1.12.6").
	Name string
	// Lacks lists the state backends the binary leaves out (Build.Lacks).
	Lacks []string
}

// NeedBackend skips the test when the engine was built without the state
// backend name, saying which engine and why; it does nothing otherwise.
func (e Engine) NeedBackend(tb testing.TB, name string) {
	tb.Helper()
	if slices.Contains(e.Lacks, name) {
		tb.Skipf("skipping: %s was built from the Go module proxy's zip, which leaves out the %q backend's nested module", e.Name, name)
	}
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

// matrix is the engine matrix, in the order Engines runs it: the oldest
// supported and the newest served release of each engine.
var matrix = []struct {
	name  string
	kind  engine.Kind
	build *Build // nil: Binary(kind)
}{
	{"terraform", engine.Terraform, nil},
	{Terraform116.Name(), engine.Terraform, &Terraform116},
	{"tofu", engine.OpenTofu, nil},
	{Tofu112.Name(), engine.OpenTofu, &Tofu112},
}

// Matrix returns the names of the engine matrix's engines in the order
// Engines runs them.
func Matrix() []string {
	out := make([]string, len(matrix))
	for i, m := range matrix {
		out[i] = m.name
	}
	return out
}

// Engines runs fn as one sub-test per engine of the matrix: "terraform"
// (on PATH), "terraform-1.16.0", "tofu" (TofuVersion) and "tofu-1.12.6",
// in that order. Each sub-test finds or builds its binary itself, so an
// engine that is unavailable skips (or, under CI=true, fails) only its
// own sub-test. fn may call t.Parallel.
func Engines(t *testing.T, fn func(t *testing.T, e Engine)) {
	t.Helper()
	for _, m := range matrix {
		t.Run(m.name, func(t *testing.T) {
			e := Engine{Kind: m.kind, Name: m.name}
			if m.build == nil {
				e.Path = Binary(t, m.kind)
			} else {
				e.Path, e.Lacks = m.build.Binary(t), m.build.Lacks
			}
			fn(t, e)
		})
	}
}
