package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// The RPCs below belong to protocol features this provider does not offer.
// Terraform only calls them for types the schema announces, so reaching one
// means a caller bug; the diagnostics say which type was asked for.

// GetResourceIdentitySchemas announces no identity schemas.
func (Server) GetResourceIdentitySchemas(context.Context, *tfprotov6.GetResourceIdentitySchemasRequest) (*tfprotov6.GetResourceIdentitySchemasResponse, error) {
	return &tfprotov6.GetResourceIdentitySchemasResponse{IdentitySchemas: map[string]*tfprotov6.ResourceIdentitySchema{}}, nil
}

// UpgradeResourceIdentity is unsupported: no resource has an identity.
func (Server) UpgradeResourceIdentity(_ context.Context, req *tfprotov6.UpgradeResourceIdentityRequest) (*tfprotov6.UpgradeResourceIdentityResponse, error) {
	return &tfprotov6.UpgradeResourceIdentityResponse{Diagnostics: unsupported("resource identity", req.TypeName)}, nil
}

// MoveResourceState is unsupported (the capability is not announced).
func (Server) MoveResourceState(_ context.Context, req *tfprotov6.MoveResourceStateRequest) (*tfprotov6.MoveResourceStateResponse, error) {
	return &tfprotov6.MoveResourceStateResponse{Diagnostics: unsupported("moved state", req.TargetTypeName)}, nil
}

// GenerateResourceConfig is unsupported (the capability is not announced).
func (Server) GenerateResourceConfig(_ context.Context, req *tfprotov6.GenerateResourceConfigRequest) (*tfprotov6.GenerateResourceConfigResponse, error) {
	return &tfprotov6.GenerateResourceConfigResponse{Diagnostics: unsupported("config generation", req.TypeName)}, nil
}

// GetFunctions announces no functions.
func (Server) GetFunctions(context.Context, *tfprotov6.GetFunctionsRequest) (*tfprotov6.GetFunctionsResponse, error) {
	return &tfprotov6.GetFunctionsResponse{Functions: map[string]*tfprotov6.Function{}}, nil
}

// CallFunction fails: there are no functions.
func (Server) CallFunction(_ context.Context, req *tfprotov6.CallFunctionRequest) (*tfprotov6.CallFunctionResponse, error) {
	return &tfprotov6.CallFunctionResponse{Error: &tfprotov6.FunctionError{Text: fmt.Sprintf("tfitest has no function %q", req.Name)}}, nil
}

// ValidateEphemeralResourceConfig is unsupported: there are no ephemeral resources.
func (Server) ValidateEphemeralResourceConfig(_ context.Context, req *tfprotov6.ValidateEphemeralResourceConfigRequest) (*tfprotov6.ValidateEphemeralResourceConfigResponse, error) {
	return &tfprotov6.ValidateEphemeralResourceConfigResponse{Diagnostics: unsupported("ephemeral resource", req.TypeName)}, nil
}

// OpenEphemeralResource is unsupported: there are no ephemeral resources.
func (Server) OpenEphemeralResource(_ context.Context, req *tfprotov6.OpenEphemeralResourceRequest) (*tfprotov6.OpenEphemeralResourceResponse, error) {
	return &tfprotov6.OpenEphemeralResourceResponse{Diagnostics: unsupported("ephemeral resource", req.TypeName)}, nil
}

// RenewEphemeralResource is unsupported: there are no ephemeral resources.
func (Server) RenewEphemeralResource(_ context.Context, req *tfprotov6.RenewEphemeralResourceRequest) (*tfprotov6.RenewEphemeralResourceResponse, error) {
	return &tfprotov6.RenewEphemeralResourceResponse{Diagnostics: unsupported("ephemeral resource", req.TypeName)}, nil
}

// CloseEphemeralResource is unsupported: there are no ephemeral resources.
func (Server) CloseEphemeralResource(_ context.Context, req *tfprotov6.CloseEphemeralResourceRequest) (*tfprotov6.CloseEphemeralResourceResponse, error) {
	return &tfprotov6.CloseEphemeralResourceResponse{Diagnostics: unsupported("ephemeral resource", req.TypeName)}, nil
}

func unsupported(feature, typeName string) []*tfprotov6.Diagnostic {
	return []*tfprotov6.Diagnostic{{
		Severity: tfprotov6.DiagnosticSeverityError,
		Summary:  "unsupported by tfitest",
		Detail:   fmt.Sprintf("the tfitest provider has no %s support (asked for %q)", feature, typeName),
	}}
}

func unknownType(typeName string) []*tfprotov6.Diagnostic {
	return []*tfprotov6.Diagnostic{{
		Severity: tfprotov6.DiagnosticSeverityError,
		Summary:  "unknown type",
		Detail:   fmt.Sprintf("the tfitest provider has no type %q", typeName),
	}}
}

func errorDiag(err error) []*tfprotov6.Diagnostic {
	return []*tfprotov6.Diagnostic{{
		Severity: tfprotov6.DiagnosticSeverityError,
		Summary:  "tfitest error",
		Detail:   err.Error(),
	}}
}
