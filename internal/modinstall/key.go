package modinstall

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// Key returns what decides the result of `terraform get` for a module
// tree: every module call's key path, source and version constraint, and
// whether any source is remote (or built from variables: tofu get
// resolves it). Units with equal keys may share the modules of one fetch.
// A call whose source or version is built from variables
// (modtree.Call.Dynamic) is keyed by its text and dyn(c), what its value
// depends on, so that it is never shared with a unit that gives the
// variables other values. dyn may be nil: the text alone is the key.
// A source the caller evaluated (modtree.Call.SourceExpr set) is keyed
// by its text and a digest of its value, never the value: the key is
// logged and kept in the module store's records, and a source built from
// a variable may carry a credential.
func Key(tree *modtree.Tree, dyn func(modtree.Call) string) (key string, remote bool) {
	lines := make([]string, 0, len(tree.Calls))
	for _, c := range tree.Calls {
		src := c.Source
		if c.SourceExpr != "" {
			sum := sha256.Sum256([]byte(c.Source))
			src = c.SourceExpr + " = sha256:" + hex.EncodeToString(sum[:])
		}
		l := c.Key + "\t" + src + "\t" + c.Version
		if c.Dynamic && dyn != nil {
			l += "\t" + dyn(c)
		}
		lines = append(lines, l)
		remote = remote || !c.Local
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), remote
}
