package lockinfo_test

import (
	"fmt"

	"github.com/tfisolate/tfisolate/internal/lockinfo"
)

// The holder of a lock as the local backend reports it, and the command
// that releases it.
func ExampleHolder() {
	msg := `Error: Error acquiring the state lock

Error message: resource temporarily unavailable
Lock Info:
  ID:        0b9c5d3e-52a1-6c70-1b2b-2f6c0a3c7d11
  Operation: OperationTypeApply
  Who:       ci@runner-7
  Created:   2026-11-21 23:50:00.1 +0000 UTC
`
	l, sure := lockinfo.Holder(msg)
	fmt.Println(l.ID, l.Who, l.Operation, l.Created.UTC(), sure)
	fmt.Println(lockinfo.ForceUnlockCommand("/w/app", "/w/data", "/usr/bin/terraform", l.ID))
	// Output:
	// 0b9c5d3e-52a1-6c70-1b2b-2f6c0a3c7d11 ci@runner-7 OperationTypeApply 2026-11-21 23:50:00.1 +0000 UTC false
	// cd /w/app && TF_DATA_DIR=/w/data /usr/bin/terraform force-unlock -force -no-color -- 0b9c5d3e-52a1-6c70-1b2b-2f6c0a3c7d11
}
