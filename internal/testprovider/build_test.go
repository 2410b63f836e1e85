package testprovider_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testprovider"
)

const paddedSize = 20 << 20

func TestBuildOnce(t *testing.T) {
	a := testprovider.Build(t)
	b := testprovider.Build(t)
	require.Same(t, a, b)
	require.FileExists(t, a.Path)
}
