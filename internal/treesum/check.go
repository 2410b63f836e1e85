package treesum

import (
	"fmt"
	"slices"
	"strings"
)

// Check compares the tree at dir with rec without reading any file's
// content (see Scan): the cheap check for every use. now is the tree as
// listed (without hashes: never a record to keep). An error means the
// tree could not be listed (dir missing or not a directory, a special
// file in it, an unreadable directory) or rec is not valid (ErrBadRecord).
func Check(dir string, rec Tree) (now Tree, changes Changes, err error) {
	return check(dir, rec, Scan)
}

// Verify compares the tree at dir with rec as Check does and also reads
// and hashes every regular file. now is the full record of the tree as
// it is: when changes is empty or only Stale (the stamps moved, the
// content did not), now is the record to keep from then on, so that
// Check passes again.
func Verify(dir string, rec Tree) (now Tree, changes Changes, err error) {
	return check(dir, rec, Record)
}

func check(dir string, rec Tree, list func(string) (Tree, error)) (Tree, Changes, error) {
	if err := rec.Validate(); err != nil {
		return nil, nil, fmt.Errorf("treesum: check tree %s: %w", dir, err)
	}
	now, err := list(dir)
	if err != nil {
		return nil, nil, err
	}
	return now, Compare(rec, now), nil
}

// Kind is what differs about one path.
type Kind int

// The kinds of change, from the most to the least telling.
const (
	// Missing: recorded, not there now.
	Missing Kind = iota + 1
	// Added: there now, not recorded.
	Added
	// TypeChanged: a directory, regular file or symlink became another of
	// them. Nothing else is compared for that path.
	TypeChanged
	// ModeChanged: the permission (or setuid, setgid, sticky) bits differ.
	ModeChanged
	// SizeChanged: a regular file's size differs.
	SizeChanged
	// TargetChanged: a symlink points elsewhere.
	TargetChanged
	// ContentChanged: a regular file's SHA-256 differs (only when the tree
	// compared was hashed: Verify, Compare with a tree from Record).
	ContentChanged
	// StampChanged: a regular file was written, replaced or chmodded since
	// it was recorded, and nothing else compared differs. After Check the
	// content is unknown; after Verify it is as recorded.
	StampChanged
)

var kindNames = [...]string{Missing: "missing", Added: "added", TypeChanged: "type", ModeChanged: "mode",
	SizeChanged: "size", TargetChanged: "target", ContentChanged: "content", StampChanged: "stamp"}

// String names the kind in one word: "missing", "content".
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// A Change is one difference between a record and a tree.
type Change struct {
	Kind Kind
	Path string
	// Recorded is the path's entry in the record (zero for Added).
	Recorded Entry
	// Found is the path's entry in the tree now (zero for Missing).
	Found Entry
}

// Words name the record in descriptions of changes, so a message reads
// in its caller's terms: Words{Tree: "the package", When: "installed"}
// gives "x was not part of the package" and "x has 4 bytes, 9 when
// installed". Empty fields read "the recorded tree" and "recorded".
type Words struct {
	Tree string // what was recorded, as in "x was not part of TREE"
	When string // when it was recorded, as in "x has 4 bytes, 9 when WHEN"
}

// Describe says what differs in w's terms.
func (c Change) Describe(w Words) string {
	if w.Tree == "" {
		w.Tree = "the recorded tree"
	}
	if w.When == "" {
		w.When = "recorded"
	}
	r, f := c.Recorded, c.Found
	switch c.Kind {
	case Missing:
		return c.Path + " is missing"
	case Added:
		return fmt.Sprintf("%s was not part of %s", c.Path, w.Tree)
	case TypeChanged:
		return fmt.Sprintf("%s is a %s, a %s when %s", c.Path, typeName(f.Mode), typeName(r.Mode), w.When)
	case ModeChanged:
		return fmt.Sprintf("%s has mode %s, %s when %s", c.Path, f.Mode, r.Mode, w.When)
	case SizeChanged:
		return fmt.Sprintf("%s has %d bytes, %d when %s", c.Path, f.Size, r.Size, w.When)
	case TargetChanged:
		return fmt.Sprintf("%s points to %q, %q when %s", c.Path, f.Target, r.Target, w.When)
	case ContentChanged:
		return fmt.Sprintf("%s has SHA-256 %s, %s when %s", c.Path, f.SHA256, r.SHA256, w.When)
	case StampChanged:
		return fmt.Sprintf("%s changed since it was %s", c.Path, w.When)
	}
	return fmt.Sprintf("%s: %s", c.Path, c.Kind)
}

// String describes the change in plain terms (Words{}).
func (c Change) String() string { return c.Describe(Words{}) }

// Changes are the differences between a record and a tree, sorted by
// path. None means the tree is as recorded, stamps included.
type Changes []Change

// Damaged reports whether anything but stamps differs: the tree is not
// what was recorded.
func (cs Changes) Damaged() bool {
	return slices.ContainsFunc(cs, func(c Change) bool { return c.Kind != StampChanged })
}

// Stale reports whether stamps, and nothing else, differ. After Check,
// the content decides: Verify. After Verify, the content is as recorded
// and the tree Verify returned is the record to keep.
func (cs Changes) Stale() bool { return len(cs) > 0 && !cs.Damaged() }

// describeMost is how many changes Describe spells out; a tree replaced
// wholesale would otherwise give a message as long as the tree.
const describeMost = 3

// Describe says what differs in w's terms, "" when nothing does: the
// changes other than stamps when there are any (a stamp says less than
// any of them), else the stamps; at most three, then how many more.
func (cs Changes) Describe(w Words) string {
	show := cs
	if cs.Damaged() {
		show = slices.DeleteFunc(slices.Clone(cs), func(c Change) bool { return c.Kind == StampChanged })
	}
	var parts []string
	for i, c := range show {
		if i == describeMost {
			parts = append(parts, fmt.Sprintf("and %d more", len(show)-i))
			break
		}
		parts = append(parts, c.Describe(w))
	}
	return strings.Join(parts, "; ")
}

// String describes the changes in plain terms (Words{}).
func (cs Changes) String() string { return cs.Describe(Words{}) }

// Compare says how now differs from rec: every path missing or added, and
// for each path in both, a changed type (and then nothing else of it), or
// each of mode, size, symlink target and (when now's entry has a SHA-256,
// as from Record) content that differs; a changed stamp only when none of
// those do. The result is sorted by path. Neither tree needs to be
// sorted.
func Compare(rec, now Tree) Changes {
	found := make(map[string]Entry, len(now))
	for _, n := range now {
		found[n.Path] = n
	}
	var cs Changes
	for _, r := range rec {
		n, ok := found[r.Path]
		if !ok {
			cs = append(cs, Change{Kind: Missing, Path: r.Path, Recorded: r})
			continue
		}
		delete(found, r.Path)
		cs = compareEntry(cs, r, n)
	}
	for _, n := range now {
		if _, ok := found[n.Path]; ok {
			cs = append(cs, Change{Kind: Added, Path: n.Path, Found: n})
		}
	}
	slices.SortStableFunc(cs, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return cs
}

// compareEntry appends to cs what differs between the recorded r and the
// found n of one path.
func compareEntry(cs Changes, r, n Entry) Changes {
	add := func(k Kind) { cs = append(cs, Change{Kind: k, Path: r.Path, Recorded: r, Found: n}) }
	if r.Mode.Type() != n.Mode.Type() {
		add(TypeChanged)
		return cs
	}
	before := len(cs)
	if r.Mode != n.Mode {
		add(ModeChanged)
	}
	if r.Size != n.Size {
		add(SizeChanged)
	}
	if r.Target != n.Target {
		add(TargetChanged)
	}
	if n.SHA256 != "" && n.SHA256 != r.SHA256 {
		add(ContentChanged)
	}
	if len(cs) == before && r.Stamp != n.Stamp {
		add(StampChanged)
	}
	return cs
}
