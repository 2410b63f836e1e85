package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// Server implements tfprotov6.ProviderServer for the tfitest provider. The
// zero value is ready to use and safe for concurrent calls: it holds no state.
type Server struct{}

// compile-time proof that Server is a complete protocol-6 provider.
var _ tfprotov6.ProviderServer = Server{}

// New returns a fresh Server; its signature fits tf6server.Serve.
func New() tfprotov6.ProviderServer { return Server{} }

// GetMetadata lists the resource and data source types.
func (Server) GetMetadata(context.Context, *tfprotov6.GetMetadataRequest) (*tfprotov6.GetMetadataResponse, error) {
	return &tfprotov6.GetMetadataResponse{
		ServerCapabilities: capabilities(),
		Resources:          []tfprotov6.ResourceMetadata{{TypeName: ItemType}},
		DataSources:        []tfprotov6.DataSourceMetadata{{TypeName: EchoType}},
	}, nil
}

// GetProviderSchema returns the (empty) provider schema and the schemas of
// tfitest_item and tfitest_echo.
func (Server) GetProviderSchema(context.Context, *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	return &tfprotov6.GetProviderSchemaResponse{
		ServerCapabilities: capabilities(),
		Provider:           &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{}},
		ResourceSchemas:    map[string]*tfprotov6.Schema{ItemType: itemSchema()},
		DataSourceSchemas:  map[string]*tfprotov6.Schema{EchoType: echoSchema()},
	}, nil
}

// ValidateProviderConfig accepts the empty provider configuration.
func (Server) ValidateProviderConfig(_ context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	return &tfprotov6.ValidateProviderConfigResponse{PreparedConfig: req.Config}, nil
}

// ConfigureProvider has nothing to configure; it allocates the memory
// AllocEnv asks for.
func (Server) ConfigureProvider(context.Context, *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	if err := allocate(); err != nil {
		return &tfprotov6.ConfigureProviderResponse{Diagnostics: errorDiag(err)}, nil
	}
	return &tfprotov6.ConfigureProviderResponse{}, nil
}

// StopProvider returns at once: no call of this provider blocks.
func (Server) StopProvider(context.Context, *tfprotov6.StopProviderRequest) (*tfprotov6.StopProviderResponse, error) {
	return &tfprotov6.StopProviderResponse{}, nil
}

func capabilities() *tfprotov6.ServerCapabilities {
	return &tfprotov6.ServerCapabilities{GetProviderSchemaOptional: true}
}
