package provider_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider/provider"
)

func TestEchoReturnsValue(t *testing.T) {
	obj := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"value": tftypes.String, "result": tftypes.String}}
	cfg, err := tfprotov6.NewDynamicValue(obj, tftypes.NewValue(obj, map[string]tftypes.Value{
		"value": str("hello"), "result": str(nil),
	}))
	require.NoError(t, err)
	resp, err := provider.New().ReadDataSource(context.Background(), &tfprotov6.ReadDataSourceRequest{TypeName: provider.EchoType, Config: &cfg})
	require.NoError(t, err)
	noErrors(t, resp.Diagnostics)
	v, err := resp.State.Unmarshal(obj)
	require.NoError(t, err)
	var m map[string]tftypes.Value
	require.NoError(t, v.As(&m))
	require.True(t, str("hello").Equal(m["result"]))
}
