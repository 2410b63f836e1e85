package main

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/demo"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// The stack's instances. They all use the demo component: what the queue
// orders is instances, whatever their component.
const (
	vpc      = "network/vpc"
	subnets  = "network/subnets"
	cluster1 = "elasticache/redis-cluster-1"
	cluster2 = "elasticache/redis-cluster-2"
)

// unitID is the runner's default ID of an instance of demo.Stack.
func unitID(instance string) string { return demo.Stack + "/" + instance }

// stackUnits returns the four units: vpc <- subnets <- redis-cluster-1, and
// redis-cluster-2 on its own.
func stackUnits(source string, latency time.Duration) []runner.Unit {
	unit := func(instance string, deps ...string) runner.Unit {
		u := runner.Unit{Workdir: workdir.Spec{
			Stack:    demo.Stack,
			Instance: instance,
			Source:   source,
			Files: map[string][]byte{
				"backend.tf.json":            demo.BackendJSON(),
				"terraform.auto.tfvars.json": vars(instance, latency),
			},
		}}
		for _, d := range deps {
			u.DependsOn = append(u.DependsOn, unitID(d))
		}
		return u
	}
	// Dependents come first: the order comes from DependsOn, not from the
	// list.
	return []runner.Unit{
		unit(cluster1, subnets),
		unit(cluster2),
		unit(subnets, vpc),
		unit(vpc),
	}
}

// vars is an instance's generated variables: a name unique in the stack.
func vars(instance string, latency time.Duration) []byte {
	b, err := json.Marshal(map[string]any{
		"name":            demo.Stack + "-" + strings.ReplaceAll(instance, "/", "-"),
		"latency_seconds": latency.Seconds(),
	})
	if err != nil {
		panic(err) // a map of a string and a number: cannot fail
	}
	return b
}
