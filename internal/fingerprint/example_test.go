package fingerprint_test

import (
	"fmt"

	"github.com/tfisolate/tfisolate/internal/fingerprint"
)

// A record keeps the digest and its parts; comparing it with now names
// the inputs that changed, never their values.
func ExampleChangedParts() {
	digest := func(region, workspace string) (string, map[string]string) {
		p := fingerprint.Parts{}
		fp := fingerprint.NewWithParts(p)
		fp.AddPart("env TF_VAR_region", fingerprint.EnvLabel("TF_VAR_region"), []byte(region))
		fp.AddPart("workspace", "workspace", []byte(workspace))
		return fp.Sum(), p.Sums()
	}
	savedSum, saved := digest("eu-west-1", "prod")
	nowSum, now := digest("us-east-1", "prod")
	fmt.Println(savedSum == nowSum)
	fmt.Println(fingerprint.ChangedParts(saved, now))
	// Output:
	// false
	// [TF_VAR_region]
}
