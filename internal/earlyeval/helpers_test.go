package earlyeval

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// inputsOf reads the root module in dir by rule with what g gives it.
func inputsOf(t *testing.T, dir string, rule modtree.Files, g Given) *Inputs {
	t.Helper()
	cfs, err := modtree.ReadConfig(dir, nil, rule)
	require.NoError(t, err)
	return New(cfs, dir, nil, g)
}
