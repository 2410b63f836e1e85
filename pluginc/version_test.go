package pluginc

import (
	"errors"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"
)

func versions(t testing.TB, ss ...string) []*version.Version {
	out := make([]*version.Version, len(ss))
	for i, s := range ss {
		v, err := parseVersion(s)
		require.NoError(t, err)
		out[i] = v
	}
	return out
}

func TestSelectVersion(t *testing.T) {
	avail := []string{"1.0.0", "1.2.0", "1.2.5", "1.3.0", "2.0.0-beta1", "2.0.0", "2.1.0", "3.0.0-rc1"}
	p := Provider{Hostname: "example.test", Namespace: "ns", Type: "t"}
	for _, tc := range []struct {
		constraints, want string
	}{
		{"", "2.1.0"},
		{"~> 1.0", "1.3.0"},
		{"~> 1", "1.3.0"},
		{"~> 1.2.0", "1.2.5"},
		{">= 1.2, < 2.0", "1.3.0"},
		{"= 1.0.0", "1.0.0"},
		{"1.2.0", "1.2.0"},
		{"!= 2.1.0", "2.0.0"},
		{"~> 1.0, != 1.3.0", "1.2.5"},
		{">= 2.0.0-beta1, < 2.0.0", ""}, // pre-release only when named exactly
		{"= 2.0.0-beta1", "2.0.0-beta1"},
		{"3.0.0-rc1", "3.0.0-rc1"},
		{"> 2.1.0", ""},
		{"<= 1.2.0", "1.2.0"},
		{"> 1.0.0, < 1.2.5", "1.2.0"},
		{"~> 2.0.0", "2.0.0"},
	} {
		t.Run(tc.constraints, func(t *testing.T) {
			cs, err := parseConstraints(tc.constraints)
			require.NoError(t, err)
			v, err := selectVersion(p, versions(t, avail...), cs)
			if tc.want == "" {
				require.ErrorIs(t, err, ErrNoMatchingVersion)
				require.ErrorContains(t, err, "available versions: 3.0.0-rc1, 2.1.0, 2.0.0, 2.0.0-beta1, 1.3.0, 1.2.5, 1.2.0, 1.0.0")
				require.ErrorContains(t, err, "example.test/ns/t")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, v.String())
		})
	}
}

func TestParseConstraintsRejects(t *testing.T) {
	for _, s := range []string{"~>", "1.0.0.0", "abc", ">= 1.0,", "^1.0", "1.x", ">= 1.0 < 2.0", "=> 1.0"} {
		_, err := parseConstraints(s)
		require.ErrorIs(t, err, ErrInvalidConstraints, s)
		require.ErrorContains(t, err, s)
	}
}

func TestNormalizeConstraints(t *testing.T) {
	for in, want := range map[string]string{
		"~> 5.0":                   "~> 5.0",
		"~> 5":                     "~> 5.0",
		"~>5.1.2":                  "~> 5.1.2",
		">= 1.2, < 2.0":            ">= 1.2.0, < 2.0.0",
		"< 2.0, >= 1.2":            ">= 1.2.0, < 2.0.0",
		"= 1.0.0":                  "1.0.0",
		"!= 1.3.0, >= 1.0":         ">= 1.0.0, != 1.3.0",
		">= 1.0, >= 1.0.0, ~> 1.0": ">= 1.0.0, ~> 1.0",
		"1.2.3-beta+meta":          "1.2.3-beta+meta",
		"":                         "",
	} {
		got, err := NormalizeConstraints(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
}

func TestParseProvider(t *testing.T) {
	for in, want := range map[string]string{
		"registry.tfisolate.test/tfisolate/tfitest": "registry.tfisolate.test/tfisolate/tfitest",
		"Example.Test/NS/Thing":                     "example.test/ns/thing",
	} {
		p, err := ParseProvider(in)
		require.NoError(t, err)
		require.Equal(t, want, p.String())
	}
	p, err := ParseProvider("hashicorp/aws")
	require.NoError(t, err)
	require.Equal(t, "hashicorp", p.Namespace)
	require.Equal(t, "aws", p.Type)
	require.NotEmpty(t, p.Hostname) // the default registry host

	for _, bad := range []string{"", "a/b/c/d", "terraform-provider-aws", "ex ample/aws", "terraform.io/builtin/terraform", "-/aws"} {
		_, err := ParseProvider(bad)
		require.ErrorIs(t, err, ErrInvalidProvider, bad)
		require.True(t, errors.Is(err, ErrInvalidProvider))
	}
}
