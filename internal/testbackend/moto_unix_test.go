//go:build unix

package testbackend

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMoto: the server answers on loopback; a bucket and the lock table
// can be made; a missing object and an unlocked state read as absent,
// never as an error.
func TestMoto(t *testing.T) {
	m := StartMoto(t)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, m.Endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, m.CreateBucket(ctx, "bkt"))
	require.NoError(t, m.CreateLockTable(ctx))
	_, ok, err := m.Object(ctx, "bkt", "k/terraform.tfstate")
	require.NoError(t, err)
	require.False(t, ok)
	for _, l := range []S3Lock{DynamoDBLock, LockFile} {
		_, ok, err = m.Lock(ctx, "bkt", "k/terraform.tfstate", l)
		require.NoError(t, err, "%s", l)
		require.False(t, ok, "%s", l)
	}
	_, _, err = m.Object(ctx, "no-such-bucket", "k")
	require.NoError(t, err, "a missing bucket reads as a missing object")
	require.Contains(t, string(m.BackendJSON("b", "k", LockFile)), `"use_lockfile": true`)
	require.Contains(t, string(m.BackendJSON("b", "k", DynamoDBLock)), `"dynamodb_table": "locks"`)
}
