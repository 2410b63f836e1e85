package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"os"
	"slices"
	"strings"

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
//
// A digest says that something differs, not what: beside it, the init
// and plan records keep parts, a digest per named input (addPart, part),
// so the error or note that a record differs can name exactly the
// inputs that do, never their values.
type fingerprint struct {
	h     hash.Hash
	parts parts // nil: no parts kept
}

func newFingerprint() fingerprint { return fingerprint{h: sha256.New()} }

// newFingerprintParts is a fingerprint that also keeps each input's
// part in p.
func newFingerprintParts(p parts) fingerprint { return fingerprint{h: sha256.New(), parts: p} }

// add hashes field name with value v.
func (f fingerprint) add(name string, v []byte) {
	fmt.Fprintf(f.h, "%s %d\n", name, len(v))
	f.h.Write(v)
}

// addPart is add, with v also hashed into the part of the input named
// label. The labels are what an error prints (`var file "prod.tfvars"`,
// `TF_VAR_region`), apart from the field names, which stay as the pinned
// encoding has them.
func (f fingerprint) addPart(name, label string, v []byte) {
	f.add(name, v)
	f.part(label, v)
}

// part hashes v into the part of the input named label only, for inputs
// one field of the digest holds together (the engine's version and its
// path).
func (f fingerprint) part(label string, v []byte) { f.parts.add(label, v) }

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

// parts are a record's digests per named input, each over everything
// its input added, in order. A label added twice (a TF_VAR_ of the unit's
// Env, in its arguments and in its inputs) is one part.
type parts map[string]hash.Hash

func (p parts) add(label string, v []byte) {
	if p == nil {
		return
	}
	h := p[label]
	if h == nil {
		h = sha256.New()
		p[label] = h
	}
	fmt.Fprintf(h, "%d\n", len(v))
	h.Write(v)
}

// sums are the parts as a record keeps them: label -> hex digest.
func (p parts) sums() map[string]string {
	out := make(map[string]string, len(p))
	for k, h := range p {
		out[k] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// changedParts names, sorted, the inputs whose parts differ between a
// record and now: an input only now is "(added)", one only in the record
// "(removed)". Never a value: parts hold digests only.
func changedParts(saved, now map[string]string) []string {
	all := map[string]string{}
	maps.Copy(all, saved)
	maps.Copy(all, now)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		was, inSaved := saved[k]
		is, inNow := now[k]
		switch {
		case !inSaved:
			out = append(out, k+" (added)")
		case !inNow:
			out = append(out, k+" (removed)")
		case was != is:
			out = append(out, k)
		}
	}
	return out
}

// envLabel names the environment variable k as an input: a TF_VAR_ by
// its own name (it is the variable's), anything else as "env K".
func envLabel(k string) string {
	if strings.HasPrefix(k, "TF_VAR_") {
		return k
	}
	return "env " + k
}
