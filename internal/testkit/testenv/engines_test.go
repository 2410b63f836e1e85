package testenv_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// Engines runs one sub-test per engine of the matrix, named after it, with
// a binary that really is that engine at that version.
func TestEngines(t *testing.T) {
	var ran []string
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		ran = append(ran, e.Name)
		require.Equal(t, "TestEngines/"+e.Name, t.Name())
		info, err := engine.Detect(context.Background(), e.Path)
		require.NoError(t, err)
		require.Equal(t, e.Kind, info.Kind)
		switch e.Name {
		case "terraform", "tofu":
			require.Equal(t, testenv.Binary(t, e.Kind), e.Path)
		default:
			require.Equal(t, string(e.Kind)+"-"+info.Version.String(), e.Name, "a built engine is named after its version")
		}
		if e.Name == "tofu" {
			require.Equal(t, testenv.TofuVersion, info.Version.String())
		}
	})
	require.Equal(t, []string{"terraform", testenv.Terraform116.Name(), "tofu", testenv.Tofu112.Name()}, testenv.Matrix())
	// An engine may be skipped where it cannot be had, but the matrix runs
	// in its order and no engine twice.
	require.NotEmpty(t, ran)
	require.Equal(t, "terraform", ran[0])
	idx := -1
	for _, n := range ran {
		i := slices.Index(testenv.Matrix(), n)
		require.Greater(t, i, idx, "%v runs out of the matrix's order", ran)
		idx = i
	}
}

// The Terraform 1.16 build lacks the backends it names, and a test that
// needs one of them skips under it.
func TestNeedBackend(t *testing.T) {
	e := testenv.Engine{Name: testenv.Terraform116.Name(), Lacks: testenv.Terraform116.Lacks}
	require.Contains(t, e.Lacks, "pg")
	require.Contains(t, e.Lacks, "s3")
	require.NotContains(t, e.Lacks, "http")
	skipped := t.Run("pg", func(t *testing.T) {
		e.NeedBackend(t, "pg")
		t.Error("NeedBackend did not skip a backend the build lacks")
	})
	require.True(t, skipped, "a skipped sub-test passes")
	ran := false
	t.Run("http", func(t *testing.T) {
		e.NeedBackend(t, "http")
		ran = true
	})
	require.True(t, ran, "a backend the build has runs")
}
