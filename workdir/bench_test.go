package workdir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// benchSource writes a 200-file component of ~2 KiB files in a few dirs.
func benchSource(b *testing.B) string {
	b.Helper()
	src := b.TempDir()
	body := strings.Repeat("# padding line for a realistic terraform file\n", 44)
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("d%d/f%03d.tf", i%5, i)] = fmt.Sprintf("# file %d\n%s", i, body)
	}
	testenv.WriteTree(b, src, files)
	return src
}

// BenchmarkPrepareCold measures building a new workdir (copy of 200 files,
// stamp, rename) per iteration.
func BenchmarkPrepareCold(b *testing.B) {
	src := benchSource(b)
	m, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		w, err := m.Prepare(ctx, Spec{Stack: "plat-ue2-dev", Instance: fmt.Sprintf("elasticache/redis-cluster-%d", i), Source: src, Files: tfvars("x")})
		if err != nil {
			b.Fatal(err)
		}
		_ = w.Close()
	}
}

// BenchmarkPrepareWarm measures Prepare of an unchanged source: lock, hash
// of the 200 files, compare; no copy.
func BenchmarkPrepareWarm(b *testing.B) {
	src := benchSource(b)
	m, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s := Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-1", Source: src, Files: tfvars("x")}
	w, err := m.Prepare(ctx, s)
	if err != nil {
		b.Fatal(err)
	}
	_ = w.Close()
	copied := 0
	m.hook = func(string) { copied++ }
	for b.Loop() {
		w, err := m.Prepare(ctx, s)
		if err != nil {
			b.Fatal(err)
		}
		_ = w.Close()
	}
	if copied != 0 {
		b.Fatalf("warm Prepare copied %d files", copied)
	}
}

// BenchmarkPrepareRefreshOneFile measures a refresh after one of the 200
// files changed: everything is hashed, one file is replaced.
func BenchmarkPrepareRefreshOneFile(b *testing.B) {
	src := benchSource(b)
	m, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s := Spec{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-1", Source: src}
	target := filepath.Join(src, "d0", "f000.tf")
	i := 0
	for b.Loop() {
		i++
		b.StopTimer()
		if err := os.WriteFile(target, fmt.Appendf(nil, "# version %d\n", i), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		w, err := m.Prepare(ctx, s)
		if err != nil {
			b.Fatal(err)
		}
		_ = w.Close()
	}
}
