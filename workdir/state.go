package workdir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/format"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// stateFile is what the package knows about one local state file after
// reading it. Every place that reads state goes through readState, so a
// state the SDK cannot read is treated alike everywhere: as holding
// resources.
type stateFile struct {
	exists bool  // a regular file is there
	size   int64 // bytes other than whitespace; -1 when unreadable
	// complete is set for a whole state document: a JSON object with a
	// "version" (terraform's and tofu's plain state) or with
	// "encrypted_data" (OpenTofu's encrypted state, which the SDK cannot
	// read further).
	complete  bool
	encrypted bool
	lineage   string
	serial    uint64
	resources int // number of resources; meaningful only when known
	outputs   int // number of root module outputs; meaningful only when known
	// known is set when resources could be counted: a complete plain
	// state. An encrypted, cut-off or unreadable state holds resources
	// as far as the SDK knows.
	known bool
}

// mayHoldResources reports whether the file must be kept as the record of
// real infrastructure: it records resources, or it exists and the SDK
// cannot tell (encrypted, cut off, unreadable). A missing file, an empty
// one and a complete plain state with no resources hold none.
func (s stateFile) mayHoldResources() bool {
	if !s.exists || s.empty() {
		return false
	}
	return !s.known || s.resources > 0
}

// recordsSomething reports whether a plan against the file would see
// anything in it: it may hold resources, or it records root module
// outputs (plain terraform plans their deletion or keeps them; a plan
// against no state at all does neither).
func (s stateFile) recordsSomething() bool {
	return s.mayHoldResources() || (s.known && s.outputs > 0)
}

// empty reports a file with nothing in it but whitespace: what the local
// backend leaves when it is killed between truncating and writing.
func (s stateFile) empty() bool { return s.exists && !s.complete && s.size == 0 }

// describe says what the file holds, for messages.
func (s stateFile) describe() string {
	switch {
	case !s.exists:
		return "no state"
	case s.encrypted:
		return "an encrypted state (resources unknown to the SDK; counted as holding resources)"
	case !s.complete && s.size == 0:
		return "an empty file"
	case !s.complete:
		return "an incomplete or unreadable state (counted as holding resources)"
	case s.resources == 1:
		return "1 resource"
	}
	return strconv.Itoa(s.resources) + " resources"
}

// maxStateSize bounds how much of a state file is read (1 GiB): larger
// files are not parsed and count as holding resources.
const maxStateSize = 1 << 30

// readState reads the local state file at p. Only regular files are
// opened (never blocking on a FIFO); anything else at p, and a file that
// cannot be read, is reported as existing and unreadable, so it counts as
// holding resources.
func readState(p string) stateFile {
	_, s := readStateBytes(p)
	return s
}

// readStateBytes is readState that also returns the file's content (nil
// when it could not be read).
func readStateBytes(p string) ([]byte, stateFile) {
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, stateFile{}
	}
	unreadable := stateFile{exists: true, size: -1}
	f, err := modtree.OpenRegular(p)
	if err != nil {
		return nil, unreadable
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() > maxStateSize {
		return nil, unreadable
	}
	b, err := io.ReadAll(io.LimitReader(f, maxStateSize+1))
	if err != nil {
		return nil, unreadable
	}
	return b, parseState(b)
}

// parseState classifies the bytes of a state file.
func parseState(b []byte) stateFile {
	s := stateFile{exists: true, size: int64(len(bytes.TrimSpace(b)))}
	if s.size == 0 {
		return s
	}
	var doc struct {
		Version       *json.Number               `json:"version"`
		Lineage       string                     `json:"lineage"`
		Serial        uint64                     `json:"serial"`
		Resources     []json.RawMessage          `json:"resources"`
		Outputs       map[string]json.RawMessage `json:"outputs"`
		EncryptedData json.RawMessage            `json:"encrypted_data"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return s
	}
	s.lineage, s.serial = doc.Lineage, doc.Serial
	switch {
	case doc.EncryptedData != nil:
		s.complete, s.encrypted = true, true
	case doc.Version != nil:
		// Versions before 4 keep resources per module, in a form not
		// counted here: they hold resources as far as the SDK knows.
		s.complete = true
		if v, err := doc.Version.Int64(); err == nil && v >= 4 {
			s.known, s.resources, s.outputs = true, len(doc.Resources), len(doc.Outputs)
		}
	}
	return s
}

// stateRecordFile, under an instance's metaDir, is what the workdir
// remembers about the instance's local state: a state it adopted from the
// component source, and the last complete state it saw at each place.
const stateRecordFile = "state.json"

// stateRecord is the content of stateRecordFile. Paths are slash paths
// relative to the component (where terraform runs), or absolute, as the
// backend names them; they stay valid when the component moves.
type stateRecord struct {
	Version int                  `json:"version,omitempty"` // stateRecordVersion when written; 1 (none named) in earlier releases'
	Adopted []adoptedState       `json:"adopted,omitempty"`
	Seen    map[string]seenState `json:"seen,omitempty"`
}

// adoptedState is one state file copied from the source by AdoptState.
type adoptedState struct {
	Source    string    `json:"source"` // absolute path in the component source
	Path      string    `json:"path"`   // where it went, relative to the component
	SHA256    string    `json:"sha256"`
	Lineage   string    `json:"lineage,omitempty"`
	Serial    uint64    `json:"serial"`
	Resources int       `json:"resources"` // -1 when the SDK cannot tell
	Time      time.Time `json:"time"`
}

// seenState is the last complete state seen at one place.
type seenState struct {
	Lineage string `json:"lineage,omitempty"`
	Serial  uint64 `json:"serial"`
}

func stateRecordPath(home string) string { return filepath.Join(home, metaDir, stateRecordFile) }

// readStateRecord returns the instance's record; an absent or unreadable
// one is empty (an unreadable one is rewritten whole by the next write).
func readStateRecord(home string) stateRecord {
	var r stateRecord
	if b, err := atomicfile.ReadFile(stateRecordPath(home), atomicfile.Record); err == nil {
		_ = json.Unmarshal(b, &r)
	}
	return r
}

// stateRecordVersion is the state record's format (internal/format).
const stateRecordVersion = 2

// writeStateRecord replaces the instance's record, unless a newer
// release wrote it (an error naming it: never overwritten).
func writeStateRecord(home string, r stateRecord) error {
	if old, err := os.ReadFile(stateRecordPath(home)); err == nil {
		if _, err := format.Read(stateRecordPath(home), old, stateRecordVersion); errors.Is(err, format.ErrNewer) {
			return err
		}
	}
	r.Version = stateRecordVersion
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.MkdirPrivate(filepath.Join(home, metaDir)); err != nil {
		return fmt.Errorf("write state record: %w", err)
	}
	if err := atomicfile.WriteFile(stateRecordPath(home), b, atomicfile.Record); err != nil {
		return fmt.Errorf("write state record: %w", err)
	}
	return nil
}

// resourceCount is s's number of resources for messages and records: -1
// when the SDK cannot tell.
func (s stateFile) resourceCount() int {
	if !s.known {
		return -1
	}
	return s.resources
}

// statePlaces returns where the local backend b keeps state for the root
// module in dir: the default workspace's file, then every other
// workspace's file found under the workspace dir (workspace_dir/NAME/
// terraform.tfstate, as terraform names them), as b names them
// (relative to dir, or absolute). It is empty for a backend that keeps
// no local state.
func statePlaces(dir string, b modtree.Backend) []string {
	if !b.Local() {
		return nil
	}
	out := []string{filepath.ToSlash(b.StatePath())}
	ws := b.StateWorkspaceDir()
	abs := ws
	if !filepath.IsAbs(ws) {
		abs = filepath.Join(dir, ws)
	}
	ents, _ := os.ReadDir(abs)
	for _, de := range ents {
		if de.IsDir() {
			out = append(out, filepath.ToSlash(filepath.Join(ws, de.Name(), "terraform.tfstate")))
		}
	}
	return out
}

// placeIn is the absolute path of the state place p (see statePlaces) of
// the root module in dir.
func placeIn(dir, p string) string {
	if filepath.IsAbs(filepath.FromSlash(p)) {
		return filepath.FromSlash(p)
	}
	return filepath.Join(dir, filepath.FromSlash(p))
}

// MayHoldResources reports whether the local state file at p must be
// taken as the record of real infrastructure: it records resources, or
// it exists and the SDK cannot tell (an OpenTofu encrypted state, a
// cut-off or unreadable file). A missing file, an empty one and a
// complete state with no resources hold none. The runner asks it before
// it lets an instance leave a local state behind for another backend.
func MayHoldResources(p string) bool { return readState(p).mayHoldResources() }
