package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCommandValid(t *testing.T) {
	noop := func(context.Context, *Handle) error { return nil }
	for _, c := range []Command{Init, Plan, SavePlan, SaveDestroyPlan, Apply, ApplyPlan, ApplyDestroyPlan, Destroy, Validate, Output, Step("state-list", noop), Step("v1.2_x", noop).Reversed()} {
		require.NoError(t, c.valid(), "%s", c)
	}
	for name, c := range map[string]Command{
		"zero":          {},
		"no function":   Step("x", nil),
		"empty name":    Step("", noop),
		"slash":         Step("a/b", noop),
		"dot first":     Step("..", noop),
		"space":         Step("state list", noop),
		"too long name": Step(string(make([]byte, 65)), noop),
	} {
		require.ErrorIs(t, c.valid(), ErrUnknownCommand, name)
	}
	require.True(t, Destroy.reverse)
	require.False(t, Destroy.Reversed().reverse)
	require.True(t, Step("x", noop).Reversed().reverse)
	require.Equal(t, "Command(invalid)", Command{}.String())
}
