package provider

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/stretchr/testify/require"
)

// The allocation is resident: the process's resident set grows by it.
func TestConfigureAllocatesWhatTheEnvironmentAsks(t *testing.T) {
	t.Setenv(AllocEnv, "64")
	before := residentBytes(t)
	resp, err := Server{}.ConfigureProvider(context.Background(), &tfprotov6.ConfigureProviderRequest{})
	require.NoError(t, err)
	require.Empty(t, resp.Diagnostics)
	require.GreaterOrEqual(t, residentBytes(t)-before, int64(64<<20))
	// Once per process: a second configure allocates nothing more.
	resp, err = Server{}.ConfigureProvider(context.Background(), &tfprotov6.ConfigureProviderRequest{})
	require.NoError(t, err)
	require.Empty(t, resp.Diagnostics)
	require.Len(t, ballast, 64<<20)
}

func residentBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	require.NoError(t, err)
	var size, rss int64
	_, err = fmt.Sscan(string(b), &size, &rss)
	require.NoError(t, err)
	return rss * int64(os.Getpagesize())
}
