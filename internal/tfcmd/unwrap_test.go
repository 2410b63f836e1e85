package tfcmd

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnwrapped: a phrase the engine broke over lines reads whole again.
func TestUnwrapped(t *testing.T) {
	for in, want := range map[string]string{
		"giving up after 2\nattempt(s)":                       "giving up after 2 attempt(s)",
		"  Required plugins are not\n\tinstalled  ":           "Required plugins are not installed",
		"terraform init: exit status 1: Module not installed": "terraform init: exit status 1: Module not installed",
	} {
		require.Equal(t, want, Unwrapped(errors.New(in)), "%q", in)
	}
}
