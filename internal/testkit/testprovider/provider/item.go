package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// ItemType is the type name of the provider's managed resource.
const ItemType = "tfitest_item"

// ItemIDPrefix is what the computed id of a tfitest_item starts with; the
// rest is the item's name, so tests can predict ids.
const ItemIDPrefix = "item-"

var itemObject = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
	"id":      tftypes.String,
	"name":    tftypes.String,
	"payload": tftypes.String,
}}

func itemSchema() *tfprotov6.Schema {
	return &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{
		Description: "A stateless test item: its id is derived from its name.",
		Attributes: []*tfprotov6.SchemaAttribute{
			{Name: "id", Type: tftypes.String, Computed: true, Description: `"item-" + name.`},
			{Name: "name", Type: tftypes.String, Required: true, Description: "Changing it replaces the item."},
			{Name: "payload", Type: tftypes.String, Optional: true, Description: "Changing it updates the item in place."},
		},
	}}
}

// item is the Go form of a tfitest_item object; unknown and null attributes
// are kept as tftypes values so they round-trip untouched.
type item struct {
	ID, Name, Payload tftypes.Value
}

func decodeItem(dv *tfprotov6.DynamicValue) (item, bool, error) {
	if dv == nil {
		return item{}, true, nil
	}
	v, err := dv.Unmarshal(itemObject)
	if err != nil {
		return item{}, false, fmt.Errorf("decode %s: %w", ItemType, err)
	}
	if v.IsNull() {
		return item{}, true, nil
	}
	var m map[string]tftypes.Value
	if err := v.As(&m); err != nil {
		return item{}, false, fmt.Errorf("decode %s: %w", ItemType, err)
	}
	return item{ID: m["id"], Name: m["name"], Payload: m["payload"]}, false, nil
}

func (it item) encode() (*tfprotov6.DynamicValue, error) {
	v := tftypes.NewValue(itemObject, map[string]tftypes.Value{
		"id": orNull(it.ID), "name": orNull(it.Name), "payload": orNull(it.Payload),
	})
	dv, err := tfprotov6.NewDynamicValue(itemObject, v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ItemType, err)
	}
	return &dv, nil
}

func nullItem() (*tfprotov6.DynamicValue, error) {
	dv, err := tfprotov6.NewDynamicValue(itemObject, tftypes.NewValue(itemObject, nil))
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ItemType, err)
	}
	return &dv, nil
}

func orNull(v tftypes.Value) tftypes.Value {
	if v.Type() == nil {
		return tftypes.NewValue(tftypes.String, nil)
	}
	return v
}

func idFor(name tftypes.Value) tftypes.Value {
	if !name.IsKnown() {
		return tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	}
	var s string
	_ = name.As(&s) // name is required, so a known name is a non-null string
	return tftypes.NewValue(tftypes.String, ItemIDPrefix+s)
}

// ValidateResourceConfig refuses an empty name, so tests can provoke a
// validation error on purpose.
func (Server) ValidateResourceConfig(_ context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	if req.TypeName != ItemType {
		return &tfprotov6.ValidateResourceConfigResponse{Diagnostics: unknownType(req.TypeName)}, nil
	}
	it, null, err := decodeItem(req.Config)
	if err != nil {
		return &tfprotov6.ValidateResourceConfigResponse{Diagnostics: errorDiag(err)}, nil
	}
	if !null && it.Name.IsKnown() && !it.Name.IsNull() {
		var s string
		_ = it.Name.As(&s)
		if s == "" {
			return &tfprotov6.ValidateResourceConfigResponse{Diagnostics: []*tfprotov6.Diagnostic{{
				Severity:  tfprotov6.DiagnosticSeverityError,
				Summary:   "empty name",
				Detail:    "tfitest_item.name must not be empty",
				Attribute: tftypes.NewAttributePath().WithAttributeName("name"),
			}}}, nil
		}
	}
	return &tfprotov6.ValidateResourceConfigResponse{}, nil
}

// UpgradeResourceState decodes the stored JSON: the schema has only ever had
// version 0, so there is nothing to migrate.
func (Server) UpgradeResourceState(_ context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	if req.TypeName != ItemType {
		return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: unknownType(req.TypeName)}, nil
	}
	if req.RawState == nil {
		st, err := nullItem()
		if err != nil {
			return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: errorDiag(err)}, nil
		}
		return &tfprotov6.UpgradeResourceStateResponse{UpgradedState: st}, nil
	}
	v, err := req.RawState.UnmarshalWithOpts(itemObject, tfprotov6.UnmarshalOpts{
		ValueFromJSONOpts: tftypes.ValueFromJSONOpts{IgnoreUndefinedAttributes: true},
	})
	if err != nil {
		return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: errorDiag(fmt.Errorf("upgrade %s state: %w", ItemType, err))}, nil
	}
	dv, err := tfprotov6.NewDynamicValue(itemObject, v)
	if err != nil {
		return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: errorDiag(fmt.Errorf("upgrade %s state: %w", ItemType, err))}, nil
	}
	return &tfprotov6.UpgradeResourceStateResponse{UpgradedState: &dv}, nil
}

// ReadResource returns the current state unchanged: the item lives only in
// Terraform's state, so it never drifts.
func (Server) ReadResource(_ context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	if req.TypeName != ItemType {
		return &tfprotov6.ReadResourceResponse{Diagnostics: unknownType(req.TypeName)}, nil
	}
	return &tfprotov6.ReadResourceResponse{NewState: req.CurrentState, Private: req.Private}, nil
}

// PlanResourceChange marks id unknown on create, keeps it on update and asks
// for replacement when name changes.
func (Server) PlanResourceChange(_ context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	if req.TypeName != ItemType {
		return &tfprotov6.PlanResourceChangeResponse{Diagnostics: unknownType(req.TypeName)}, nil
	}
	proposed, destroy, err := decodeItem(req.ProposedNewState)
	if err != nil {
		return &tfprotov6.PlanResourceChangeResponse{Diagnostics: errorDiag(err)}, nil
	}
	if destroy {
		return &tfprotov6.PlanResourceChangeResponse{PlannedState: req.ProposedNewState}, nil
	}
	prior, create, err := decodeItem(req.PriorState)
	if err != nil {
		return &tfprotov6.PlanResourceChangeResponse{Diagnostics: errorDiag(err)}, nil
	}
	resp := &tfprotov6.PlanResourceChangeResponse{}
	switch {
	case create:
		proposed.ID = tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	case !prior.Name.Equal(proposed.Name):
		proposed.ID = idFor(proposed.Name)
		resp.RequiresReplace = []*tftypes.AttributePath{tftypes.NewAttributePath().WithAttributeName("name")}
	default:
		proposed.ID = prior.ID
	}
	if resp.PlannedState, err = proposed.encode(); err != nil {
		return &tfprotov6.PlanResourceChangeResponse{Diagnostics: errorDiag(err)}, nil
	}
	return resp, nil
}

// ApplyResourceChange creates, updates or deletes an item; none of them has
// side effects beyond the returned state.
func (Server) ApplyResourceChange(_ context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	if req.TypeName != ItemType {
		return &tfprotov6.ApplyResourceChangeResponse{Diagnostics: unknownType(req.TypeName)}, nil
	}
	planned, destroy, err := decodeItem(req.PlannedState)
	if err != nil {
		return &tfprotov6.ApplyResourceChangeResponse{Diagnostics: errorDiag(err)}, nil
	}
	if destroy {
		st, err := nullItem()
		if err != nil {
			return &tfprotov6.ApplyResourceChangeResponse{Diagnostics: errorDiag(err)}, nil
		}
		return &tfprotov6.ApplyResourceChangeResponse{NewState: st}, nil
	}
	planned.ID = idFor(planned.Name)
	st, err := planned.encode()
	if err != nil {
		return &tfprotov6.ApplyResourceChangeResponse{Diagnostics: errorDiag(err)}, nil
	}
	return &tfprotov6.ApplyResourceChangeResponse{NewState: st, Private: req.PlannedPrivate}, nil
}

// ImportResourceState takes the item's name as the import ID.
func (Server) ImportResourceState(_ context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	if req.TypeName != ItemType {
		return &tfprotov6.ImportResourceStateResponse{Diagnostics: unknownType(req.TypeName)}, nil
	}
	name := tftypes.NewValue(tftypes.String, req.ID)
	st, err := item{ID: idFor(name), Name: name}.encode()
	if err != nil {
		return &tfprotov6.ImportResourceStateResponse{Diagnostics: errorDiag(err)}, nil
	}
	return &tfprotov6.ImportResourceStateResponse{ImportedResources: []*tfprotov6.ImportedResource{{
		TypeName: ItemType, State: st,
	}}}, nil
}
