package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/format"
)

// The format versions of the records a unit keeps in its data dir
// (internal/format): the version each writes and the newest each reads.
// Version 1 is every earlier release's, which named none; the fields
// they lacked read as absent (an init or plan record without parts is
// compared by its digests). A change to what a record holds bumps its
// version.
const (
	initRecordVersion = 2 // tfisolate-init.json
	appliedVersion    = 2 // tfisolate-applied.json
	// tfisolate-plan/plan.meta.json, and the record a bundle carries:
	// version 2 names the workspace and the component's files a plan was
	// made from, so that a stale plan's error names them.
	planMetaVersion = 2
	applyingVersion = 2 // tfisolate-plan/applying.json
)

// readRecord reads the JSON record at path into v if this release reads
// its version (reads is the newest it does). It reports whether there
// was one; a record a newer release wrote is not read, and its
// *format.NewerError returned (ErrNewerFormat): the caller refuses the
// unit by name and leaves the record as it is (DESIGN invariant 22). A
// record that does not parse is reported as found, with its error.
func readRecord(path string, reads int, v any) (bool, error) {
	b, err := atomicfile.ReadFile(path, atomicfile.Record)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if _, err := format.Read(path, b, reads); err != nil {
		return true, err
	}
	return true, json.Unmarshal(b, v)
}
