package lockinfo

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// Marker is how the engine reports a state lock held by someone else,
// on every backend.
const Marker = "Error acquiring the state lock"

// Lock is a state lock as the engine's lock error describes it (its
// "Lock Info:" block). Only ID is always set.
type Lock struct {
	ID        string
	Path      string
	Operation string
	Who       string
	Version   string
	Created   time.Time // zero when the engine printed none, or one it cannot be read from
	Info      string
}

var (
	lockFieldRe = regexp.MustCompile(`(?m)^\s*(ID|Path|Operation|Who|Version|Created|Info):[ \t]*(.*?)\s*$`)
	// heldIDRe is how backends that print the requester's lock info
	// (http) name the holder: only by ID.
	heldIDRe = regexp.MustCompile(`already locked: ID=(\S+)`)
)

// createdLayout is how the engine prints a lock's creation time (Go's
// time.Time.String).
const createdLayout = "2006-01-02 15:04:05.999999999 -0700 MST"

// IsLocked reports whether err is the engine's failure to take a state
// lock someone else holds.
func IsLocked(err error) bool {
	return err != nil && strings.Contains(err.Error(), Marker)
}

// Parse reads the "Lock Info:" block of the engine's lock error; nil
// when it has none, or one without an ID. The first ID counts.
func Parse(msg string) *Lock {
	_, info, ok := strings.Cut(msg, "Lock Info:")
	if !ok {
		return nil
	}
	l := &Lock{}
	for _, m := range lockFieldRe.FindAllStringSubmatch(info, -1) {
		v := m[2]
		switch m[1] {
		case "ID":
			if l.ID == "" {
				l.ID = v
			}
		case "Path":
			l.Path = v
		case "Operation":
			l.Operation = v
		case "Who":
			l.Who = v
		case "Version":
			l.Version = v
		case "Created":
			if t, err := time.Parse(createdLayout, v); err == nil {
				l.Created = t
			}
		case "Info":
			l.Info = v
		}
	}
	if l.ID == "" {
		return nil
	}
	return l
}

// Holder reads who holds the lock from the engine's lock error; nil when
// it names no one (the pg backend). Some backends print the lock info of
// the failed attempt itself, not the holder's: the http backend names
// the holder only as "ID=...", which then wins over an info block with
// another ID. sure reports that the backend named the holder so, apart
// from the block: otherwise a block may be the attempt's own, which only
// the caller can tell (by its Who and Created).
func Holder(msg string) (l *Lock, sure bool) {
	l = Parse(msg)
	if m := heldIDRe.FindStringSubmatch(msg); m != nil {
		if l == nil || l.ID != m[1] {
			return &Lock{ID: m[1]}, true
		}
		return l, true
	}
	return l, false
}

// ForceUnlockCommand is the shell command that releases lock id, as a
// user runs it by hand: in the unit's directory dir, with its data dir
// (a plain `terraform force-unlock` there would ask for init), with the
// engine binary at enginePath, without a prompt. The workspace the
// engine selected is in the data dir. Every part is quoted for a POSIX
// shell where it needs it.
func ForceUnlockCommand(dir, dataDir, enginePath, id string) string {
	args := tfcmd.ForceUnlock(id).Args
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return fmt.Sprintf("cd %s && TF_DATA_DIR=%s %s %s", shellQuote(dir), shellQuote(dataDir),
		shellQuote(enginePath), strings.Join(quoted, " "))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
