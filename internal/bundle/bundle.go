package bundle

import (
	"archive/tar"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/format"
)

// The members of a bundle.
const (
	ManifestMember = "manifest.json"
	PlanMember     = "plan.tfplan"
	PlanJSONMember = "plan.json"
	LockMember     = "lock.hcl"
)

const (
	// Version is the bundle format this release writes, and the newest
	// it reads. Version 2 covers the backend type and the record's parts
	// (a digest per named input) with its digest; version 1 bundles were
	// written under one name in three shapes (without either, with the
	// backend, with both), so a reader cannot tell which its digest
	// covered and refuses them by name (Read). Any change to what the
	// manifest holds or its digest covers, the record's fields included,
	// bumps it (TestContent here, runner's TestPlanMetaFieldsPinned).
	Version = 2
	// Format names Version in a manifest.
	Format = formatPrefix + "2"

	formatPrefix = "tfisolate-plan-bundle/"
	ext          = ".tfplan-bundle"

	// maxBytes bounds what Read reads: a bundle is refused past it rather
	// than read into memory without end.
	maxBytes = 1 << 30
)

// Path is where the bundle of a unit lives in dir; name is the unit's
// part of a file name (safe on every filesystem, never the same for two
// units).
func Path(dir, name string) string {
	return filepath.Join(dir, name+ext)
}

// A Record is the runner's record of what a saved plan was made from. A
// bundle carries it whole, under its digest and MAC, and Read checks the
// plan and lock members against the sums it names.
type Record interface {
	// PlanSHA256 is the hex sha256 of the saved plan file.
	PlanSHA256() string
	// LockSHA256 is the hex sha256 of the dependency lock file the plan
	// was made with, "" when there was none.
	LockSHA256() string
}

// Manifest is a bundle's manifest.json.
type Manifest[R Record] struct {
	Format string `json:"format"`
	Unit   string `json:"unit"`
	Record R      `json:"meta"`
	// Backend is the type of the backend the unit's state is in ("s3",
	// "http", "cloud", ...). Read refuses "local" and "" (an older
	// export's bundle records none).
	Backend string            `json:"backend,omitempty"`
	Files   map[string]string `json:"files"`          // member name: sha256
	Digest  string            `json:"digest"`         // sha256 of the fields above
	MAC     string            `json:"mac,omitempty"`  // HMAC-SHA256 of the same, with the host's key
	Made    time.Time         `json:"made"`           // when the bundle was written; not covered
	Host    string            `json:"host,omitempty"` // where; not covered
}

// content is what the digest and the MAC cover. Backend is left out
// when empty, so a manifest altered to record none still matches its
// digest and is refused for what it lacks, by name.
func (m *Manifest[R]) content() []byte {
	b, _ := json.Marshal(struct {
		Format  string            `json:"format"`
		Unit    string            `json:"unit"`
		Meta    R                 `json:"meta"`
		Backend string            `json:"backend,omitempty"`
		Files   map[string]string `json:"files"`
	}{m.Format, m.Unit, m.Record, m.Backend, m.Files})
	return b
}

func mac(key, content []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Write writes at path the bundle of m's unit, record and backend and
// of members (member name: content), and returns its size. It sets m's
// Format, Files, Digest, Made and Host, and its MAC when key is not nil
// (nil: no MAC). It writes what it is given: whether the plan may leave
// the machine is the caller's to check.
func Write[R Record](path string, m *Manifest[R], members map[string][]byte, key []byte) (int, error) {
	m.Format, m.Files, m.MAC = Format, map[string]string{}, ""
	m.Made = time.Now().UTC()
	m.Host, _ = os.Hostname()
	for name, data := range members {
		m.Files[name] = sha256Hex(data)
	}
	m.Digest = sha256Hex(m.content())
	if key != nil {
		m.MAC = mac(key, m.content())
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), ModTime: m.Made, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	err = add(ManifestMember, mb)
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if err == nil {
			err = add(name, members[name])
		}
	}
	if err = errors.Join(err, tw.Close()); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return 0, err
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return 0, err
	}
	return buf.Len(), nil
}

// A RefusedError is why Read refused a bundle.
type RefusedError struct {
	Path   string // the bundle
	Reason string
	// LocalState: the bundle's record says the unit's state is in the
	// local backend of the machine that planned.
	LocalState bool
	// Err is the *format.NewerError of a bundle a newer release wrote;
	// nil otherwise.
	Err error
}

func (e *RefusedError) Error() string { return e.Path + ": " + e.Reason }

// Unwrap is Err: errors.Is(err, format.ErrNewer) holds for a bundle of a
// newer release.
func (e *RefusedError) Unwrap() error { return e.Err }

// versionOf is the format version a manifest's format names; false when
// it is not a plan bundle's.
func versionOf(name string) (int, bool) {
	n, ok := strings.CutPrefix(name, formatPrefix)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(n)
	return v, err == nil && v >= 1 && strconv.Itoa(v) == n
}

// Read reads and checks the bundle at path for unit: its form, its
// members against its digest, its MAC when key is not nil, its backend,
// its plan and lock members against its record (see the package doc).
// It returns the manifest and the members other than the manifest, or
// a *RefusedError.
func Read[R Record](path, unit string, key []byte) (*Manifest[R], map[string][]byte, error) {
	refuse := func(format string, a ...any) error {
		return &RefusedError{Path: path, Reason: fmt.Sprintf(format, a...)}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, refuse("%v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, nil, refuse("not a regular file")
	}
	tr := tar.NewReader(io.LimitReader(f, maxBytes))
	members := map[string][]byte{}
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, refuse("not a plan bundle: %v", err)
		}
		switch h.Name {
		case ManifestMember, PlanMember, PlanJSONMember, LockMember:
		default:
			return nil, nil, refuse("unexpected member %q", h.Name)
		}
		if _, dup := members[h.Name]; dup || h.Typeflag != tar.TypeReg {
			return nil, nil, refuse("member %q is repeated or not a file", h.Name)
		}
		if total += h.Size; h.Size < 0 || total > maxBytes {
			return nil, nil, refuse("larger than %d bytes", int64(maxBytes))
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, nil, refuse("read %s: %v", h.Name, err)
		}
		members[h.Name] = data
	}
	// The format first, read alone: a newer release's manifest may not
	// even decode as this one's.
	var named struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(members[ManifestMember], &named); err != nil {
		return nil, nil, refuse("no readable manifest: %v", err)
	}
	switch v, ok := versionOf(named.Format); {
	case !ok:
		return nil, nil, refuse("format %q is not a plan bundle's (want %q)", named.Format, Format)
	case v > Version:
		newer := &format.NewerError{Record: path, Have: v, Reads: Version}
		return nil, nil, &RefusedError{Path: path, Reason: newer.Why(), Err: newer}
	case v < Version:
		return nil, nil, refuse("written by an older release: format %d; this release reads format %d only, whose digest "+
			"covers the backend and each input: export the plan again with this release", v, Version)
	}
	var m Manifest[R]
	if err := json.Unmarshal(members[ManifestMember], &m); err != nil {
		return nil, nil, refuse("no readable manifest: %v", err)
	}
	delete(members, ManifestMember)
	switch {
	case m.Digest != sha256Hex(m.content()):
		return nil, nil, refuse("the manifest does not match its digest (damaged or altered)")
	case m.Unit != unit:
		return nil, nil, refuse("it is the plan of unit %s, not of %s", m.Unit, unit)
	case key == nil && m.MAC != "":
		// A keyed bundle checked without a key is checked by its digest
		// alone, which anyone can recompute: the apply job's secret is
		// missing, not the bundle's.
		return nil, nil, refuse("it carries a MAC (exported with a key), and no key was given: give ImportPlan the key ExportPlan had")
	case key != nil && m.MAC == "":
		return nil, nil, refuse("it carries no MAC (exported without a key), and a key was given: export it again with the key " +
			"(ExportPlan(dir, key)); a bundle without a MAC could be anyone's")
	case key != nil && !hmac.Equal([]byte(m.MAC), []byte(mac(key, m.content()))):
		return nil, nil, refuse("its MAC does not match the key (altered, or made with another key)")
	}
	switch m.Backend {
	case "":
		return nil, nil, refuse("it records no backend (altered?): its state may be local to the " +
			"machine that planned; export the plan again")
	case "local":
		return nil, nil, &RefusedError{Path: path, LocalState: true,
			Reason: "it says its state is in the local backend of the machine that planned (altered?)"}
	}
	if len(m.Files) != len(members) {
		return nil, nil, refuse("the manifest lists %d members, the bundle holds %d", len(m.Files), len(members))
	}
	for name, data := range members {
		if m.Files[name] != sha256Hex(data) {
			return nil, nil, refuse("member %s does not match the manifest (damaged or altered)", name)
		}
	}
	if members[PlanMember] == nil || m.Files[PlanMember] != m.Record.PlanSHA256() || m.Files[LockMember] != m.Record.LockSHA256() {
		return nil, nil, refuse("its plan or lock file is not the one its record describes")
	}
	return &m, members, nil
}
