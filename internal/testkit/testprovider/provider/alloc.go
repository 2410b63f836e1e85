package provider

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// AllocEnv names the environment variable that makes the provider
// allocate and touch that many MiB when it is configured (plan, apply,
// refresh: every command that calls a resource or data source), and hold
// them until the process ends. Terraform passes its environment to its
// plugins, so a unit's Env sets it for that unit's providers only. It
// stands for a real provider's resident size (the AWS provider is a few
// hundred MB), so tests of memory scheduling use real processes with a
// real footprint.
const AllocEnv = "TFITEST_ALLOC_MIB"

// AllocHoldEnv names the environment variable (a Go duration) for how
// long ConfigureProvider keeps the provider busy after the allocation, so
// the resident memory of concurrent units overlaps for at least that
// long, as a slow cloud API would make it.
const AllocHoldEnv = "TFITEST_ALLOC_HOLD"

var (
	allocOnce sync.Once
	allocErr  error
	// ballast keeps the allocation reachable until the process ends.
	ballast []byte
)

// allocate does what AllocEnv and AllocHoldEnv ask, once per process.
func allocate() error {
	allocOnce.Do(func() {
		v := os.Getenv(AllocEnv)
		if v == "" {
			return
		}
		mib, err := strconv.Atoi(v)
		if err != nil || mib < 0 {
			allocErr = fmt.Errorf("%s=%q: want a number of MiB", AllocEnv, v)
			return
		}
		b := make([]byte, mib<<20)
		// Touch every page: an untouched allocation is not resident.
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		ballast = b
		if h := os.Getenv(AllocHoldEnv); h != "" {
			d, err := time.ParseDuration(h)
			if err != nil || d < 0 {
				allocErr = fmt.Errorf("%s=%q: want a duration", AllocHoldEnv, h)
				return
			}
			time.Sleep(d)
		}
	})
	return allocErr
}
