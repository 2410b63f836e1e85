package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// EchoType is the type name of the provider's data source.
const EchoType = "tfitest_echo"

var echoObject = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
	"value":  tftypes.String,
	"result": tftypes.String,
}}

func echoSchema() *tfprotov6.Schema {
	return &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{
		Description: "Returns its input: result = value.",
		Attributes: []*tfprotov6.SchemaAttribute{
			{Name: "value", Type: tftypes.String, Required: true},
			{Name: "result", Type: tftypes.String, Computed: true},
		},
	}}
}

// ValidateDataResourceConfig accepts any configuration the schema allows.
func (Server) ValidateDataResourceConfig(_ context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	if req.TypeName != EchoType {
		return &tfprotov6.ValidateDataResourceConfigResponse{Diagnostics: unknownType(req.TypeName)}, nil
	}
	return &tfprotov6.ValidateDataResourceConfigResponse{}, nil
}

// ReadDataSource copies value into result.
func (Server) ReadDataSource(_ context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	if req.TypeName != EchoType {
		return &tfprotov6.ReadDataSourceResponse{Diagnostics: unknownType(req.TypeName)}, nil
	}
	if req.Config == nil {
		return &tfprotov6.ReadDataSourceResponse{Diagnostics: errorDiag(fmt.Errorf("read %s: no configuration", EchoType))}, nil
	}
	v, err := req.Config.Unmarshal(echoObject)
	if err != nil {
		return &tfprotov6.ReadDataSourceResponse{Diagnostics: errorDiag(fmt.Errorf("read %s: %w", EchoType, err))}, nil
	}
	var m map[string]tftypes.Value
	if err := v.As(&m); err != nil {
		return &tfprotov6.ReadDataSourceResponse{Diagnostics: errorDiag(fmt.Errorf("read %s: %w", EchoType, err))}, nil
	}
	m["result"] = m["value"]
	dv, err := tfprotov6.NewDynamicValue(echoObject, tftypes.NewValue(echoObject, m))
	if err != nil {
		return &tfprotov6.ReadDataSourceResponse{Diagnostics: errorDiag(fmt.Errorf("read %s: %w", EchoType, err))}, nil
	}
	return &tfprotov6.ReadDataSourceResponse{State: &dv}, nil
}
