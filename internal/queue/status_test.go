package queue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{
		Succeeded: "succeeded", Failed: "failed", Skipped: "skipped", Canceled: "canceled",
		0: "Status(0)", 42: "Status(42)", -1: "Status(-1)",
	} {
		require.Equal(t, want, s.String())
	}
}
