//go:build !(linux || darwin || freebsd)

package reflink

import "os"

// copySparse is not available here: the caller copies every byte.
func copySparse(dst, src *os.File) (bool, error) { return false, nil }
