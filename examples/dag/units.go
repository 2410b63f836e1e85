package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/demo"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// The stack's instances: a VPC, two clusters placed in it, and one
// cluster on its own.
const (
	vpc      = "network/vpc"
	cluster1 = "elasticache/redis-cluster-1"
	cluster2 = "elasticache/redis-cluster-2"
	cluster3 = "elasticache/redis-cluster-3"
)

// networkFile is the tfvars file a cluster in the VPC gets its network in.
const networkFile = "network.auto.tfvars.json"

// unitID is the runner's default ID of an instance of demo.Stack.
func unitID(instance string) string { return demo.Stack + "/" + instance }

// stackUnits returns the four units: the VPC of vpcSource, and the
// clusters of source, 1 and 2 depending on the VPC and getting its
// outputs, 3 independent.
func stackUnits(vpcSource, source string, latency time.Duration) []runner.Unit {
	unit := func(instance, src string) runner.Unit {
		return runner.Unit{Workdir: workdir.Spec{
			Stack:    demo.Stack,
			Instance: instance,
			Source:   src,
			Files: map[string][]byte{
				"backend.tf.json":            demo.BackendJSON(),
				"terraform.auto.tfvars.json": vars(instance, latency),
			},
		}}
	}
	inVPC := func(u runner.Unit) runner.Unit {
		u.DependsOn = []string{unitID(vpc)}
		u.Generate = networkVars
		return u
	}
	// Dependents come first: the order comes from DependsOn, not from the
	// list.
	return []runner.Unit{
		inVPC(unit(cluster1, source)),
		inVPC(unit(cluster2, source)),
		unit(cluster3, source),
		unit(vpc, vpcSource),
	}
}

// networkVars is the Generate of a cluster in the VPC. The runner calls it
// right before the cluster starts, once the VPC is applied, with the VPC's
// result; the VPC's outputs, JSON already, become the cluster's vpc_id and
// subnet_ids variables.
func networkVars(_ context.Context, deps map[string]runner.Result) (map[string][]byte, error) {
	res, ok := deps[unitID(vpc)]
	if !ok {
		// Destroy runs the clusters before the VPC, so they get no result
		// of it: they need none to be destroyed.
		return nil, nil
	}
	v := map[string]json.RawMessage{}
	for _, name := range []string{"vpc_id", "subnet_ids"} {
		out, ok := res.Outputs[name]
		if !ok {
			return nil, fmt.Errorf("%s has no output %q", res.Unit, name)
		}
		v[name] = out.Value
	}
	b, err := json.MarshalIndent(v, "", "  ")
	return map[string][]byte{networkFile: b}, err
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
