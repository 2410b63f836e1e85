package testenv_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testenv"
)

// Engines runs one sub-test per engine, named after it, with a binary that
// really is that engine.
func TestEngines(t *testing.T) {
	var ran []engine.Kind
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		ran = append(ran, e.Kind)
		require.Equal(t, "TestEngines/"+string(e.Kind), t.Name())
		require.Equal(t, testenv.Binary(t, e.Kind), e.Path)
		info, err := engine.Detect(context.Background(), e.Path)
		require.NoError(t, err)
		require.Equal(t, e.Kind, info.Kind)
	})
	// An engine may be skipped where it cannot be had, but Terraform comes
	// first and OpenTofu never runs twice.
	require.NotEmpty(t, ran)
	require.Equal(t, engine.Terraform, ran[0])
	require.LessOrEqual(t, len(ran), 2)
}
