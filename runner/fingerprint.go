package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"

	"github.com/tfisolate/tfisolate/internal/engine"
)

// fingerprint hashes what a record depends on, for every record the
// runner compares with now: the init record (initFingerprint, skip init),
// the applied record (inputsDigest, skip unchanged) and the saved plan's
// record (planArgsDigest and planInputs, refuse a stale plan or
// bundle). Each field is named and length-prefixed, so two different
// lists of fields never hash alike, and adding a field changes every
// sum. Changing the encoding makes every record on disk differ once
// (init runs again, nothing is skipped, saved plans are refused as
// stale), so it is pinned by a test. The backend's own digest
// (backendFingerprint, inside the init record) keeps an encoding of its
// own: a record whose backend digest differs is a changed backend, which
// init refuses or reconfigures.
type fingerprint struct{ h hash.Hash }

func newFingerprint() fingerprint { return fingerprint{h: sha256.New()} }

// add hashes field name with value v.
func (f fingerprint) add(name string, v []byte) {
	fmt.Fprintf(f.h, "%s %d\n", name, len(v))
	f.h.Write(v)
}

// addString is add of a string.
func (f fingerprint) addString(name, v string) { f.add(name, []byte(v)) }

// addFile hashes the content of the file at path; a missing or
// unreadable file counts as empty (a lock file not written yet).
func (f fingerprint) addFile(name, path string) {
	b, _ := os.ReadFile(path)
	f.add(name, b)
}

// sum is the fingerprint, hex.
func (f fingerprint) sum() string { return hex.EncodeToString(f.h.Sum(nil)) }

// engineID names the engine a record was made with: its kind and version.
func engineID(e engine.Info) string { return string(e.Kind) + " " + e.Version.String() }
