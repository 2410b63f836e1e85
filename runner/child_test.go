package runner

import "fmt"

// runChild is the body of a re-executed test binary acting as another OS
// process; see TestMain.
func runChild(role string) int {
	switch role {
	default:
		fmt.Printf("unknown child role %q\n", role)
		return 2
	}
}
