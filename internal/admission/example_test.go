package admission_test

import (
	"context"
	"fmt"

	"github.com/tfisolate/tfisolate/internal/admission"
)

// A Run's memory gate under a 1 GiB budget: two units expected at
// 400 MiB run together, the third waits for memory until one ends.
func ExampleMemory() {
	const mib = 1 << 20
	units := []admission.Unit{
		{ID: "stack/a", Source: "/src/vpc", Expected: 400 * mib},
		{ID: "stack/b", Source: "/src/vpc", Expected: 400 * mib},
		{ID: "stack/c", Source: "/src/vpc", Expected: 400 * mib},
	}
	m := admission.NewMemory(admission.MemoryConfig{Budget: 1024 * mib, Engine: "terraform", Class: admission.ClassPlan,
		Parallelism: 3, Units: units, OnWait: func(w admission.Wait) {
			if w.Waited == 0 {
				fmt.Printf("%s waits for %d MiB\n", units[w.Unit].ID, w.Memory/mib)
			}
		}})
	fmt.Println(m.Admit(0, 0), m.Admit(1, 1), m.Admit(2, 2))
	// Output:
	// stack/c waits for 400 MiB
	// true true false
}

// The core gate of one core: a unit's terraform process waits while
// another unit's is busy, and goes on once it was released.
func ExampleCores() {
	ctx := context.Background()
	waited := make(chan int, 1)
	g := admission.NewCores(1, func(w admission.Wait) {
		if w.Waited == 0 {
			waited <- w.Unit
		}
	})
	_ = g.Acquire(ctx, 0)
	done := make(chan error)
	go func() { done <- g.Acquire(ctx, 1) }()
	fmt.Println("unit", <-waited, "waits for a core")
	g.Release(0)
	fmt.Println("unit 1 goes on:", <-done == nil)
	// Output:
	// unit 1 waits for a core
	// unit 1 goes on: true
}
