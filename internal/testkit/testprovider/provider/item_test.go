package provider_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider/provider"
)

var itemObject = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
	"id": tftypes.String, "name": tftypes.String, "payload": tftypes.String,
}}

func str(v any) tftypes.Value { return tftypes.NewValue(tftypes.String, v) }

var unknown = str(tftypes.UnknownValue)

func itemDV(t *testing.T, id, name, payload tftypes.Value) *tfprotov6.DynamicValue {
	t.Helper()
	dv, err := tfprotov6.NewDynamicValue(itemObject, tftypes.NewValue(itemObject, map[string]tftypes.Value{
		"id": id, "name": name, "payload": payload,
	}))
	require.NoError(t, err)
	return &dv
}

func nullItemDV(t *testing.T) *tfprotov6.DynamicValue {
	t.Helper()
	dv, err := tfprotov6.NewDynamicValue(itemObject, tftypes.NewValue(itemObject, nil))
	require.NoError(t, err)
	return &dv
}

func decode(t *testing.T, dv *tfprotov6.DynamicValue) map[string]tftypes.Value {
	t.Helper()
	require.NotNil(t, dv)
	v, err := dv.Unmarshal(itemObject)
	require.NoError(t, err)
	if v.IsNull() {
		return nil
	}
	var m map[string]tftypes.Value
	require.NoError(t, v.As(&m))
	return m
}

func noErrors(t *testing.T, diags []*tfprotov6.Diagnostic) {
	t.Helper()
	for _, d := range diags {
		require.NotEqual(t, tfprotov6.DiagnosticSeverityError, d.Severity, "%s: %s", d.Summary, d.Detail)
	}
}

func TestSchemaAnnouncesItemAndEcho(t *testing.T) {
	resp, err := provider.New().GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	require.NoError(t, err)
	noErrors(t, resp.Diagnostics)
	require.Empty(t, resp.Provider.Block.Attributes, "the provider takes no configuration")
	attrs := map[string]*tfprotov6.SchemaAttribute{}
	for _, a := range resp.ResourceSchemas[provider.ItemType].Block.Attributes {
		attrs[a.Name] = a
	}
	require.True(t, attrs["name"].Required)
	require.True(t, attrs["payload"].Optional)
	require.True(t, attrs["id"].Computed)
	require.Contains(t, resp.DataSourceSchemas, provider.EchoType)

	meta, err := provider.New().GetMetadata(context.Background(), &tfprotov6.GetMetadataRequest{})
	require.NoError(t, err)
	require.Equal(t, []tfprotov6.ResourceMetadata{{TypeName: provider.ItemType}}, meta.Resources)
}

func TestPlanItem(t *testing.T) {
	ctx := context.Background()
	s := provider.New()
	tests := []struct {
		name            string
		prior, proposed *tfprotov6.DynamicValue
		wantID          tftypes.Value
		wantReplace     bool
	}{
		{
			name:     "create leaves id unknown",
			prior:    nullItemDV(t),
			proposed: itemDV(t, str(nil), str("a"), str("p")),
			wantID:   unknown,
		},
		{
			name:     "payload change keeps id",
			prior:    itemDV(t, str("item-a"), str("a"), str("p")),
			proposed: itemDV(t, str("item-a"), str("a"), str("q")),
			wantID:   str("item-a"),
		},
		{
			name:        "name change replaces",
			prior:       itemDV(t, str("item-a"), str("a"), str("p")),
			proposed:    itemDV(t, str("item-a"), str("b"), str("p")),
			wantID:      str("item-b"),
			wantReplace: true,
		},
		{
			name:        "unknown new name replaces with unknown id",
			prior:       itemDV(t, str("item-a"), str("a"), str("p")),
			proposed:    itemDV(t, str("item-a"), unknown, str("p")),
			wantID:      unknown,
			wantReplace: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := s.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{
				TypeName: provider.ItemType, PriorState: tt.prior, ProposedNewState: tt.proposed, Config: tt.proposed,
			})
			require.NoError(t, err)
			noErrors(t, resp.Diagnostics)
			got := decode(t, resp.PlannedState)
			require.True(t, tt.wantID.Equal(got["id"]), "id: got %v want %v", got["id"], tt.wantID)
			require.Equal(t, tt.wantReplace, len(resp.RequiresReplace) > 0)
		})
	}
}

func TestApplyItemLifecycle(t *testing.T) {
	ctx := context.Background()
	s := provider.New()

	created, err := s.ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{
		TypeName: provider.ItemType, PriorState: nullItemDV(t), PlannedState: itemDV(t, unknown, str("a"), str(nil)),
	})
	require.NoError(t, err)
	noErrors(t, created.Diagnostics)
	m := decode(t, created.NewState)
	require.True(t, str(provider.ItemIDPrefix+"a").Equal(m["id"]))
	require.True(t, m["payload"].IsNull())

	updated, err := s.ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{
		TypeName: provider.ItemType, PriorState: created.NewState, PlannedState: itemDV(t, str("item-a"), str("a"), str("x")),
	})
	require.NoError(t, err)
	noErrors(t, updated.Diagnostics)
	m = decode(t, updated.NewState)
	require.True(t, str("x").Equal(m["payload"]))

	read, err := s.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: provider.ItemType, CurrentState: updated.NewState})
	require.NoError(t, err)
	require.Equal(t, updated.NewState, read.NewState, "read passes state through")

	deleted, err := s.ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{
		TypeName: provider.ItemType, PriorState: updated.NewState, PlannedState: nullItemDV(t),
	})
	require.NoError(t, err)
	noErrors(t, deleted.Diagnostics)
	require.Nil(t, decode(t, deleted.NewState), "delete returns a null state")
}

func TestImportItemByName(t *testing.T) {
	resp, err := provider.New().ImportResourceState(context.Background(), &tfprotov6.ImportResourceStateRequest{TypeName: provider.ItemType, ID: "z"})
	require.NoError(t, err)
	noErrors(t, resp.Diagnostics)
	require.Len(t, resp.ImportedResources, 1)
	m := decode(t, resp.ImportedResources[0].State)
	require.True(t, str("item-z").Equal(m["id"]))
	require.True(t, str("z").Equal(m["name"]))
}

func TestUpgradeItemState(t *testing.T) {
	resp, err := provider.New().UpgradeResourceState(context.Background(), &tfprotov6.UpgradeResourceStateRequest{
		TypeName: provider.ItemType,
		RawState: &tfprotov6.RawState{JSON: []byte(`{"id":"item-a","name":"a","payload":null,"gone":1}`)},
	})
	require.NoError(t, err)
	noErrors(t, resp.Diagnostics)
	m := decode(t, resp.UpgradedState)
	require.True(t, str("item-a").Equal(m["id"]))
}

func TestValidateRefusesEmptyName(t *testing.T) {
	resp, err := provider.New().ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{
		TypeName: provider.ItemType, Config: itemDV(t, str(nil), str(""), str(nil)),
	})
	require.NoError(t, err)
	require.Len(t, resp.Diagnostics, 1)
	require.Contains(t, resp.Diagnostics[0].Detail, "name")

	ok, err := provider.New().ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{
		TypeName: provider.ItemType, Config: itemDV(t, str(nil), unknown, str(nil)),
	})
	require.NoError(t, err)
	noErrors(t, ok.Diagnostics)
}

func TestUnknownTypeIsAnError(t *testing.T) {
	resp, err := provider.New().PlanResourceChange(context.Background(), &tfprotov6.PlanResourceChangeRequest{TypeName: "tfitest_nope"})
	require.NoError(t, err)
	require.Len(t, resp.Diagnostics, 1)
	require.Contains(t, resp.Diagnostics[0].Detail, "tfitest_nope")
}
