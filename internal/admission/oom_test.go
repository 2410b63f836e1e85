package admission

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// What terraform says when a plugin died under it, and what it says
// for errors of its own.
func TestPluginDiedMessages(t *testing.T) {
	for _, msg := range []string{
		"Error: Plugin did not respond\n\nThe plugin encountered an error, and failed to respond to the plugin.(*GRPCProvider).ApplyResourceChange call.",
		"Error: Request cancelled\n\nThe plugin.(*GRPCProvider).PlanResourceChange request was cancelled.",
		"rpc error: code = Unavailable desc = error reading from server: EOF",
		"Error: The terraform-provider-tfitest_v1.0.0 plugin crashed!",
		// go-plugin's, for a plugin killed while it started.
		"Error: Failed to load plugin schemas\n\nError while loading schemas for plugin components: Failed to obtain provider schema: " +
			"Could not load the schema for provider example.test/x/y: failed to instantiate provider \"example.test/x/y\" to obtain schema: " +
			"Unrecognized remote plugin message: \nFailed to read any lines from plugin's stdout",
		"failed to instantiate provider \"example.test/x/y\" to obtain schema: plugin exited before we could connect",
	} {
		require.True(t, pluginDiedRe.MatchString(msg), msg)
	}
	for _, msg := range []string{
		"Error: Unsupported argument",
		"Error: Error acquiring the state lock",
		"Error: Request failed: the upload was cancelled by the user",
	} {
		require.False(t, pluginDiedRe.MatchString(msg), msg)
	}
}
