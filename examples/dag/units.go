package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/runner"
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

// stack is the stack of every instance.
const stack = "plat-ue2-dev"

// unitID is the runner's default ID of an instance of stack.
func unitID(instance string) string { return stack + "/" + instance }

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
		"name":            stack + "-" + strings.ReplaceAll(instance, "/", "-"),
		"latency_seconds": latency.Seconds(),
	})
	if err != nil {
		panic(err) // a map of a string and a number: cannot fail
	}
	return b
}
