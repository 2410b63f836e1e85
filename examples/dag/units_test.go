package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/runner"
)

// A cluster's Generate writes the VPC's outputs as they are, and refuses
// a VPC result without them.
func TestNetworkVars(t *testing.T) {
	vpcResult := runner.Result{Unit: unitID(vpc), Outputs: map[string]runner.OutputValue{
		"vpc_id":     {Value: json.RawMessage(`"vpc-1"`)},
		"subnet_ids": {Value: json.RawMessage(`["a","b"]`)},
	}}
	files, err := networkVars(context.Background(), map[string]runner.Result{unitID(vpc): vpcResult})
	require.NoError(t, err)
	require.JSONEq(t, `{"vpc_id":"vpc-1","subnet_ids":["a","b"]}`, string(files[networkFile]))

	files, err = networkVars(context.Background(), map[string]runner.Result{})
	require.NoError(t, err)
	require.Empty(t, files, "destroy order: no VPC result, no file")

	delete(vpcResult.Outputs, "subnet_ids")
	_, err = networkVars(context.Background(), map[string]runner.Result{unitID(vpc): vpcResult})
	require.ErrorContains(t, err, `plat-ue2-dev/network/vpc has no output "subnet_ids"`)
}
