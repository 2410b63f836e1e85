package queue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tfisolate/tfisolate/internal/queue"
)

func Example() {
	ids := []string{
		"plat-ue2-dev/vpc",
		"plat-ue2-dev/elasticache/redis-cluster-1",
		"plat-ue2-dev/elasticache/redis-cluster-3",
		"plat-ue2-dev/app",
	}
	deps := [][]string{
		nil,
		{"plat-ue2-dev/vpc"},
		{"plat-ue2-dev/vpc"},
		{"plat-ue2-dev/elasticache/redis-cluster-1"},
	}
	g, err := queue.New(ids, deps)
	if err != nil {
		fmt.Println(err)
		return
	}
	var f queue.Filter
	if err := f.Add([]string{"!**/redis-cluster-3"}, false); err != nil {
		fmt.Println(err)
		return
	}
	sel, err := g.Select(&f, 0, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := queue.Policy{Parallelism: 4}
	fmt.Println("apply:", g.Waves(sel, p))
	fmt.Println("destroy:", g.Waves(sel, queue.Policy{Parallelism: 4, Reverse: true}))

	// done is serialized by Run; with one failure, what waits for it is skipped.
	g.Run(context.Background(), sel, p, nil, func(ctx context.Context, i int) error {
		if g.ID(i) == "plat-ue2-dev/elasticache/redis-cluster-1" {
			return errors.New("quota exceeded")
		}
		return nil
	}, func(i int, o queue.Outcome) {
		fmt.Printf("%s: %s (%v)\n", g.ID(i), o.Status, o.Err)
	})
	// Output:
	// apply: [[plat-ue2-dev/vpc] [plat-ue2-dev/elasticache/redis-cluster-1] [plat-ue2-dev/app]]
	// destroy: [[plat-ue2-dev/app] [plat-ue2-dev/elasticache/redis-cluster-1] [plat-ue2-dev/vpc]]
	// plat-ue2-dev/vpc: succeeded (<nil>)
	// plat-ue2-dev/elasticache/redis-cluster-1: failed (quota exceeded)
	// plat-ue2-dev/app: skipped (skipped: dependency failed: plat-ue2-dev/elasticache/redis-cluster-1 did not succeed)
}

func ExampleFilter_Add() {
	g, _ := queue.New([]string{"plat-ue2-dev/vpc", "plat-ue2-prod/vpc"}, nil)
	var f queue.Filter
	_ = f.Add([]string{"*/redis-cluster-4"}, true) // exclude
	_, err := g.Select(&f, 0, 1)
	fmt.Println(err)
	fmt.Println(errors.Is(err, queue.ErrNoMatch))
	// Output:
	// filter pattern matches no unit: "*/redis-cluster-4"
	// true
}
