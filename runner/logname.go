package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// logName names the log of unit id for command cmd in a log dir: a
// readable part of the ID (at most 80 bytes), a hash of the whole ID, so
// two IDs never share a file, then the command, so each command's log is
// kept (a Plan and then an Apply leave two files): ID-HASH.COMMAND.log.
// Safe on every filesystem and at most 163 bytes, since a command's name
// is at most 64 bytes of [A-Za-z0-9._-] (stepNameRe).
func logName(id, cmd string) string { return unitFileName(id) + "." + cmd + ".log" }

// unitFileName is the part of a file name that stands for unit id: a
// readable part of the ID, then a hash of the whole ID.
func unitFileName(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case b.Len() >= 80:
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(id))
	return strings.TrimLeft(b.String(), ".") + "-" + hex.EncodeToString(sum[:6])
}
