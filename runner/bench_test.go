package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sleepComponent stands in for a cloud resource that takes a second to
// create: it is replaced on every apply, so every apply waits again.
const sleepComponent = `
resource "terraform_data" "slow" {
  triggers_replace = timestamp()
  provisioner "local-exec" {
    command = "sleep 1"
  }
}
`

// BenchmarkParallelApply applies 48 units whose apply waits 1 s, at
// parallelism 16: ideally 3 s (three rounds of 16). For comparison it also
// applies 4 of them sequentially and extrapolates that to 48 (labelled
// seq48-extrapolated-s). Run it once: go test -run '^$' -bench
// ParallelApply -benchtime=1x ./runner/
func BenchmarkParallelApply(b *testing.B) {
	const units, par = 48, 16
	w := newWorld(b)
	src := w.component(b, "slow", sleepComponent)
	mk := func(n int, stack string) []Unit {
		var us []Unit
		for i := range n {
			inst := fmt.Sprintf("slow/%02d", i)
			us = append(us, Unit{Workdir: workdirSpec(stack, inst, src,
				files(b, map[string]any{}, filepath.Join(w.dir, "states", stack, fmt.Sprintf("%02d.tfstate", i))))})
		}
		return us
	}
	ctx := context.Background()

	seqUnits := mk(4, "seq")
	seq := w.runner(b, WithParallelism(1))
	start := time.Now()
	_, err := seq.Run(ctx, Apply, seqUnits...)
	require.NoError(b, err)
	seqPer := time.Since(start) / time.Duration(len(seqUnits))

	all := mk(units, "par")
	r := w.runner(b, WithParallelism(par))
	var total time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		_, err := r.Run(ctx, Apply, all...)
		total += time.Since(start)
		require.NoError(b, err)
	}
	b.StopTimer()
	got := total.Seconds() / float64(b.N)
	ideal := float64(units/par) * 1.0
	b.ReportMetric(got, "s/run")
	b.ReportMetric(ideal, "ideal-s")
	b.ReportMetric(got/ideal, "x-ideal")
	b.ReportMetric(seqPer.Seconds()*units, "seq48-extrapolated-s")
	b.ReportMetric(seqPer.Seconds()*units/got, "speedup-vs-seq")
}
