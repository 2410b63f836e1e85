package format

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNewer is matched (errors.Is) by every *NewerError.
var ErrNewer = errors.New("written by a newer release")

// A NewerError is a record or bundle written by a newer release in a
// format this release cannot read.
type NewerError struct {
	Record string // the record: its path, or its name when it has none
	Have   int    // the format version it was written in
	Reads  int    // the newest format version this release reads
}

func (e *NewerError) Error() string { return e.Record + ": " + e.Why() }

// Why is the error's message without the record's name.
func (e *NewerError) Why() string {
	return fmt.Sprintf("%s: format %d; this release reads up to %d; upgrade this job", ErrNewer, e.Have, e.Reads)
}

// Is makes errors.Is(err, ErrNewer) hold.
func (e *NewerError) Is(target error) bool { return target == ErrNewer }

// Check returns a *NewerError when version have of record is newer than
// reads, the newest version this release reads; nil otherwise.
func Check(record string, have, reads int) error {
	if have > reads {
		return &NewerError{Record: record, Have: have, Reads: reads}
	}
	return nil
}

// Version is the format version a JSON record names in its "version"
// field: 1 when it has none (records written before they named their
// version), an error when the record is not a JSON object or the field
// is not a positive integer.
func Version(b []byte) (int, error) {
	var v struct {
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, err
	}
	if v.Version == nil {
		return 1, nil
	}
	var n int64
	if err := json.Unmarshal(v.Version, &n); err != nil || n < 1 || n > 1<<30 {
		return 0, fmt.Errorf("format version %s is not a positive integer", v.Version)
	}
	return int(n), nil
}

// Read checks the version of the JSON record b, read from record,
// against reads, the newest version this release reads: it returns the
// version when this release reads it, a *NewerError when it is newer,
// another error when b names no readable version.
func Read(record string, b []byte, reads int) (int, error) {
	v, err := Version(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", record, err)
	}
	return v, Check(record, v, reads)
}
