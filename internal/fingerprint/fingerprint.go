package fingerprint

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

// Fingerprint hashes what a record depends on, one named field at a
// time. Each field is named and length-prefixed, so two different lists
// of fields never hash alike, and adding a field changes every sum.
// Changing the encoding makes every record on disk differ once, so it is
// pinned by a test.
//
// A digest says that something differs, not what: a Fingerprint made by
// NewWithParts also keeps a digest per named input (AddPart, Part), so
// the error or note that a record differs can name exactly the inputs
// that do, never their values.
type Fingerprint struct {
	h     hash.Hash
	parts Parts // nil: no parts kept
}

// New returns an empty Fingerprint that keeps no parts.
func New() Fingerprint { return Fingerprint{h: sha256.New()} }

// NewWithParts returns an empty Fingerprint that also keeps each input's
// part in p.
func NewWithParts(p Parts) Fingerprint { return Fingerprint{h: sha256.New(), parts: p} }

// Add hashes field name with value v.
func (f Fingerprint) Add(name string, v []byte) {
	fmt.Fprintf(f.h, "%s %d\n", name, len(v))
	f.h.Write(v)
}

// AddPart is Add, with v also hashed into the part of the input named
// label. The labels are what an error prints (`var file "prod.tfvars"`,
// `TF_VAR_region`), apart from the field names, which stay as the pinned
// encoding has them.
func (f Fingerprint) AddPart(name, label string, v []byte) {
	f.Add(name, v)
	f.Part(label, v)
}

// Part hashes v into the part of the input named label only, for inputs
// one field of the digest holds together (the engine's version and its
// path).
func (f Fingerprint) Part(label string, v []byte) { f.parts.Add(label, v) }

// AddString is Add of a string.
func (f Fingerprint) AddString(name, v string) { f.Add(name, []byte(v)) }

// AddFile hashes the content of the file at path; a missing or
// unreadable file counts as empty (a lock file not written yet).
func (f Fingerprint) AddFile(name, path string) {
	b, _ := os.ReadFile(path)
	f.Add(name, b)
}

// Sum is the fingerprint, hex.
func (f Fingerprint) Sum() string { return hex.EncodeToString(f.h.Sum(nil)) }

// EngineID names the engine a record was made with: its kind and version.
func EngineID(e engine.Info) string { return string(e.Kind) + " " + e.Version.String() }

// Parts are a record's digests per named input, each over everything
// its input added, in order. A label added twice (a TF_VAR_ of the unit's
// Env, in its arguments and in its inputs) is one part. Make them with
// Parts{}; a nil Parts keeps nothing.
type Parts map[string]hash.Hash

// Add hashes v, length-prefixed, into the part of the input named label.
func (p Parts) Add(label string, v []byte) {
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

// Sums are the parts as a record keeps them: label -> hex digest.
func (p Parts) Sums() map[string]string {
	out := make(map[string]string, len(p))
	for k, h := range p {
		out[k] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// ChangedParts names, sorted, the inputs whose parts differ between a
// record and now: an input only now is "(added)", one only in the record
// "(removed)". Never a value: parts hold digests only.
func ChangedParts(saved, now map[string]string) []string {
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

// EnvLabel names the environment variable k as an input: a TF_VAR_ by
// its own name (it is the variable's), anything else as "env K".
func EnvLabel(k string) string {
	if strings.HasPrefix(k, "TF_VAR_") {
		return k
	}
	return "env " + k
}
