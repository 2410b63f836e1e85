package workdir

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrInvalid is wrapped by every error about a bad argument: a stack,
	// instance, source or generated-file name that is empty, escapes, or
	// does not exist. Nothing is written when it is returned.
	ErrInvalid = errors.New("invalid input")

	// ErrLocked is wrapped by the error returned when the instance lock
	// could not be taken before the context ended. Use errors.As with
	// *LockedError to learn who holds it.
	ErrLocked = errors.New("instance is locked")

	// ErrHasState is returned by Remove when the workdir still holds local
	// Terraform state with resources and force was not given.
	ErrHasState = errors.New("workdir holds local state")

	// ErrLeftBehind is returned by Prepare when the component moved inside
	// the layout (a local module outside its directory appeared or went)
	// and some of the instance's data could not follow it without
	// replacing something at the new position. The error names both
	// paths; nothing was overwritten, and the next Prepare tries again.
	ErrLeftBehind = errors.New("instance data would be left behind")
)

// InputError describes one bad argument. It wraps ErrInvalid.
type InputError struct {
	Field  string // "stack", "instance", "source", "file", "root", "option"
	Value  string
	Reason string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *InputError) Unwrap() error { return ErrInvalid }

func invalid(field, value, format string, args ...any) error {
	return &InputError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// Holder says who holds an instance lock, as written by the holder right
// after it acquired the lock.
type Holder struct {
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Since time.Time `json:"since"`
}

func (h Holder) String() string {
	return fmt.Sprintf("pid %d on %s since %s", h.PID, h.Host, h.Since.UTC().Format(time.RFC3339))
}

// LockedError is returned when Prepare or Remove gave up waiting for an
// instance lock. It wraps both ErrLocked and the context's error.
type LockedError struct {
	Stack    string
	Instance string
	LockFile string
	Holder   *Holder // nil when the holder has not (yet) said who it is
	Err      error   // context.DeadlineExceeded or context.Canceled
}

func (e *LockedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance %s/%s is locked", e.Stack, e.Instance)
	if e.Holder != nil {
		fmt.Fprintf(&b, " by %s", e.Holder)
	} else {
		b.WriteString(" by an unknown holder")
	}
	fmt.Fprintf(&b, " (lock file %s)", e.LockFile)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap exposes ErrLocked and the context error to errors.Is.
func (e *LockedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLocked}
	}
	return []error{ErrLocked, e.Err}
}
