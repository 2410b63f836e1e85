package engine_test

import (
	"runtime"
	"testing"

	tofuaddr "github.com/opentofu/registry-address"
	"github.com/stretchr/testify/require"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"github.com/tfisolate/tfisolate/internal/engine"
)

func TestParseKind(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want engine.Kind
		err  bool
	}{
		{in: "terraform", want: engine.Terraform},
		{in: " Terraform ", want: engine.Terraform},
		{in: "tofu", want: engine.OpenTofu},
		{in: "OpenTofu", want: engine.OpenTofu},
		{in: "", err: true},
		{in: "terragrunt", err: true},
		{in: "tf", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := engine.ParseKind(tc.in)
			if tc.err {
				require.ErrorIs(t, err, engine.ErrUnknownKind)
				require.Contains(t, err.Error(), `"`+tc.in+`"`)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// Each engine's default registry host is its own library's constant, and
// the two differ: a short provider address names two different providers.
func TestKindRegistryHost(t *testing.T) {
	require.Equal(t, tfaddr.DefaultProviderRegistryHost.String(), engine.Terraform.RegistryHost())
	require.Equal(t, tofuaddr.DefaultProviderRegistryHost.String(), engine.OpenTofu.RegistryHost())
	require.NotEqual(t, engine.Terraform.RegistryHost(), engine.OpenTofu.RegistryHost())
	require.Empty(t, engine.Kind("nope").RegistryHost())

	i := engine.Info{Kind: engine.OpenTofu}
	require.Equal(t, engine.OpenTofu.RegistryHost(), i.RegistryHost())
}

func TestKindNames(t *testing.T) {
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	for _, tc := range []struct {
		k                   engine.Kind
		valid               bool
		product, executable string
	}{
		{engine.Terraform, true, "Terraform", "terraform" + exe},
		{engine.OpenTofu, true, "OpenTofu", "tofu" + exe},
		{engine.Kind(""), false, "", ""},
		{engine.Kind("opentofu"), false, "", ""},
	} {
		require.Equal(t, tc.valid, tc.k.Valid(), tc.k)
		require.Equal(t, tc.product, tc.k.Product(), tc.k)
		require.Equal(t, tc.executable, tc.k.Executable(), tc.k)
	}
}
