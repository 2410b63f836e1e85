package pluginc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"golang.org/x/mod/sumdb/dirhash"
)

// hashDir returns the h1: hash of an unpacked package exactly as Terraform
// computes it for a package directory, which equals the h1: of its zip.
// Tests use it as the reference for the cache's own h1Of.
func hashDir(dir string) (string, error) {
	h, err := dirhash.HashDir(dir, "", dirhash.Hash1)
	if err != nil {
		return "", fmt.Errorf("hash package %s: %w", dir, err)
	}
	return h, nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
