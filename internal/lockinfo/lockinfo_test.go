package lockinfo

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	// As terraform 1.x prints it (local backend).
	msg := `
Error: Error acquiring the state lock

Error message: resource temporarily unavailable
Lock Info:
  ID:        0b9c5d3e-52a1-6c70-1b2b-2f6c0a3c7d11
  Path:      /tmp/x/shared.tfstate
  Operation: OperationTypeApply
  Who:       ci@runner-7
  Version:   1.11.4
  Created:   2026-11-21 23:50:00.1 +0000 UTC
  Info:

Terraform acquires a state lock to protect the state from being written
by multiple users at the same time.`
	got := Parse(msg)
	require.NotNil(t, got)
	require.Equal(t, Lock{ID: "0b9c5d3e-52a1-6c70-1b2b-2f6c0a3c7d11", Path: "/tmp/x/shared.tfstate", Operation: "OperationTypeApply",
		Who: "ci@runner-7", Version: "1.11.4", Created: time.Date(2026, 11, 21, 23, 50, 0, 100_000_000, time.UTC)}, *got)
	require.Nil(t, Parse("Error acquiring the state lock"))
}

// httpLockErr is the http backend's lock error: the info block is the
// failed attempt's own; only "ID=" names the holder.
const httpLockErr = `Error: Error acquiring the state lock

Error message: HTTP remote state already locked: ID=holder-1
Lock Info:
  ID:        attempt-2
  Path:
  Operation: OperationTypePlan
  Who:       me@here
  Version:   1.11.4
  Created:   2026-11-21 23:50:00.1 +0000 UTC
  Info:
`

// TestHolder: the backend's "ID=" wins over an info block with another
// ID and makes the answer sure; a block with that ID is the holder's
// whole; a block alone may be the attempt's own (not sure); no block, no
// holder.
func TestHolder(t *testing.T) {
	l, sure := Holder(httpLockErr)
	require.Equal(t, &Lock{ID: "holder-1"}, l)
	require.True(t, sure)

	l, sure = Holder(strings.Replace(httpLockErr, "attempt-2", "holder-1", 1))
	require.True(t, sure)
	require.Equal(t, "holder-1", l.ID)
	require.Equal(t, "me@here", l.Who, "the block is the holder's")

	l, sure = Holder(strings.Replace(httpLockErr, "already locked: ID=holder-1", "already locked", 1))
	require.False(t, sure)
	require.Equal(t, "attempt-2", l.ID)

	l, sure = Holder("Error: Error acquiring the state lock\n\nError message: pq: could not obtain lock")
	require.Nil(t, l, "the pg backend names no holder")
	require.False(t, sure)
}

func TestIsLocked(t *testing.T) {
	require.True(t, IsLocked(fmt.Errorf("terraform plan: exit status 1: %s", httpLockErr)))
	require.False(t, IsLocked(errors.New("terraform plan: exit status 1: Error: Unsupported argument")))
	require.False(t, IsLocked(nil))
}

// TestForceUnlockCommand: plain parts are not quoted; any other part is,
// so that a POSIX shell gets it back as it was, however odd.
func TestForceUnlockCommand(t *testing.T) {
	cmd := ForceUnlockCommand("/w/src/app", "/w/data", "/opt/bin/terraform", "lock-1")
	require.Equal(t, "cd /w/src/app && TF_DATA_DIR=/w/data /opt/bin/terraform force-unlock -force -no-color -- lock-1", cmd)

	require.Equal(t, `cd '/w/my app' && TF_DATA_DIR='/w/it'\''s' /opt/bin/tofu force-unlock -force -no-color -- '$(x)'`,
		ForceUnlockCommand("/w/my app", "/w/it's", "/opt/bin/tofu", "$(x)"))

	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no POSIX shell:", err)
	}
	for _, s := range []string{"", "plain", "with space", "it's", `"double" $HOME`, "a\nb", "-dash", "*?[x]", `back\slash`} {
		out, err := exec.Command(sh, "-c", "printf '%s' "+shellQuote(s)).Output()
		require.NoError(t, err, "%q", s)
		require.Equal(t, s, string(out), "%q quoted as %s", s, shellQuote(s))
	}
}

// TestParseCreated: a creation time the engine printed in another zone
// is read as that instant; one that cannot be read leaves Created zero
// and the rest of the lock as it is.
func TestParseCreated(t *testing.T) {
	l := Parse("Lock Info:\n  ID: x\n  Created: 2026-11-21 23:50:00.123456789 +0100 CET\n")
	require.True(t, l.Created.Equal(time.Date(2026, 11, 21, 22, 50, 0, 123456789, time.UTC)), "%v", l.Created)
	l = Parse("Lock Info:\n  ID: x\n  Created: yesterday\n  Who: a@b\n")
	require.True(t, l.Created.IsZero())
	require.Equal(t, "a@b", l.Who)
	require.Nil(t, Parse("Lock Info:\n  Who: a@b\n"), "no ID, no lock")
}
