package bundle_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/bundle"
)

// planRecord is what the runner records of a saved plan, reduced to the
// sums a bundle checks.
type planRecord struct {
	Plan string `json:"plan"`
}

func (r planRecord) PlanSHA256() string { return r.Plan }
func (r planRecord) LockSHA256() string { return "" }

func Example() {
	dir, _ := os.MkdirTemp("", "bundle-example-")
	defer os.RemoveAll(dir)
	plan := []byte("terraform's saved plan")
	sum := sha256.Sum256(plan)
	key := []byte("the fleet's secret")

	p := bundle.Path(filepath.Join(dir, "artifacts"), "plat-ue2-dev_vpc-0a1b2c")
	m := &bundle.Manifest[planRecord]{Unit: "plat-ue2-dev/vpc", Record: planRecord{Plan: hex.EncodeToString(sum[:])}, Backend: "s3"}
	if _, err := bundle.Write(p, m, map[string][]byte{bundle.PlanMember: plan}, key); err != nil {
		fmt.Println(err)
		return
	}

	got, members, err := bundle.Read[planRecord](p, "plat-ue2-dev/vpc", key)
	fmt.Println(got.Unit, got.Backend, string(members[bundle.PlanMember]), err)

	_, _, err = bundle.Read[planRecord](p, "plat-ue2-dev/vpc", nil)
	var refused *bundle.RefusedError
	fmt.Println(errors.As(err, &refused), refused.Reason)
	// Output:
	// plat-ue2-dev/vpc s3 terraform's saved plan <nil>
	// true it carries a MAC (exported with a key), and no key was given: give ImportPlan the key ExportPlan had
}
