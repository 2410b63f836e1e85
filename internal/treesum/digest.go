package treesum

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// DigestPrefix starts every digest Digest returns: the scheme and its
// version, so a digest of another form is never compared with one of
// this one.
const DigestPrefix = "treesum1:"

// Digest is one string that stands for the tree's content: the SHA-256
// of every entry's path, type and permission bits, size, content hash
// and symlink target, in the tree's order, never its stamps (which are
// the machine's own). Two trees recorded on different machines have the
// same digest exactly when Compare finds no difference but stamps. A
// tree from Scan (no content hashes) has a digest too, but it does not
// vouch for any file's content.
func (t Tree) Digest() string {
	h := sha256.New()
	for _, e := range t {
		// Each field is length-prefixed, so no path or target can make
		// two trees read alike.
		for _, f := range []string{e.Path, strconv.FormatUint(uint64(e.Mode), 8), strconv.FormatInt(e.Size, 10), e.SHA256, e.Target} {
			fmt.Fprintf(h, "%d:%s", len(f), f)
		}
		h.Write([]byte{'\n'})
	}
	return DigestPrefix + hex.EncodeToString(h.Sum(nil))
}
