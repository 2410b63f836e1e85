package queue

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkRunPerUnit runs N independent units that do nothing, at
// parallelism 16, and reports the queue's own cost per unit: flat as N
// grows (a ready list kept in order, never re-sorted per completion).
func BenchmarkRunPerUnit(b *testing.B) {
	for _, n := range []int{10_000, 40_000} {
		b.Run(fmt.Sprintf("units=%d", n), func(b *testing.B) {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("stack-%03d/component/instance-%06d", i%97, i)
			}
			g, err := New(ids, make([][]string, n))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				g.Run(context.Background(), nil, Policy{Parallelism: 16}, nil,
					func(context.Context, int) error { return nil }, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/unit")
		})
	}
}
