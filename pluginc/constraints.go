package pluginc

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-version"
)

// op is one operator of Terraform's version constraint syntax.
type op int

// The order is the one Terraform uses to sort terms with equal boundaries
// in a lock file's constraints string.
const (
	opGT op = iota + 1
	opGE
	opEQ
	opPessimisticPatch // ~> X.Y.Z: >= X.Y.Z, < X.(Y+1).0
	opPessimisticMinor // ~> X.Y (or ~> X): >= X.Y.0, < (X+1).0.0
	opLE
	opLT
	opNE
)

var opText = map[op]string{
	opGT: "> ", opGE: ">= ", opEQ: "", opPessimisticPatch: "~> ", opPessimisticMinor: "~> ",
	opLE: "<= ", opLT: "< ", opNE: "!= ",
}

// term is one comma-separated part of a constraints string. Omitted
// version parts are zero: Terraform treats "2" and "2.0.0" alike.
type term struct {
	op       op
	boundary *version.Version
	text     string // canonical boundary text
}

// constraints is a parsed Terraform version constraints string.
type constraints []term

var termRE = regexp.MustCompile(`^(=|!=|>=|<=|>|<|~>)?\s*([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$`)

// parseConstraints parses Terraform's version constraint syntax: terms
// separated by commas, each an optional operator (=, !=, >, >=, <, <=, ~>)
// and a version of one to three numeric parts with optional pre-release and
// build metadata. The empty string means "any released version".
func parseConstraints(s string) (constraints, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var cs constraints
	for raw := range strings.SplitSeq(s, ",") {
		m := termRE.FindStringSubmatch(strings.TrimSpace(raw))
		if m == nil {
			return nil, fmt.Errorf("%w %q: term %q is not an operator followed by a version", ErrInvalidConstraints, s, strings.TrimSpace(raw))
		}
		nums := [3]uint64{}
		for i, p := range m[2:5] {
			if p == "" {
				continue
			}
			n, err := strconv.ParseUint(p, 10, 63)
			if err != nil {
				return nil, fmt.Errorf("%w %q: version part %q is too large", ErrInvalidConstraints, s, p)
			}
			nums[i] = n
		}
		t := term{}
		switch m[1] {
		case "", "=":
			t.op = opEQ
		case "!=":
			t.op = opNE
		case ">":
			t.op = opGT
		case ">=":
			t.op = opGE
		case "<":
			t.op = opLT
		case "<=":
			t.op = opLE
		case "~>":
			t.op = opPessimisticMinor
			if m[4] != "" {
				t.op = opPessimisticPatch
			}
		}
		if t.op == opPessimisticMinor {
			t.text = fmt.Sprintf("%d.%d", nums[0], nums[1])
		} else {
			t.text = fmt.Sprintf("%d.%d.%d", nums[0], nums[1], nums[2])
		}
		t.text += m[5] + m[6]
		v, err := version.NewSemver(fmt.Sprintf("%d.%d.%d%s%s", nums[0], nums[1], nums[2], m[5], m[6]))
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v", ErrInvalidConstraints, s, err)
		}
		t.boundary = v
		cs = append(cs, t)
	}
	return cs, nil
}

// allows reports whether v satisfies every term. A pre-release is allowed
// only when some term names it exactly with "=", as in Terraform.
func (cs constraints) allows(v *version.Version) bool {
	if v.Prerelease() != "" {
		named := false
		for _, t := range cs {
			if t.op == opEQ && v.Equal(t.boundary) && v.Prerelease() == t.boundary.Prerelease() {
				named = true
			}
		}
		if !named {
			return false
		}
	}
	for _, t := range cs {
		if !t.allows(v) {
			return false
		}
	}
	return true
}

func (t term) allows(v *version.Version) bool {
	c := v.Compare(t.boundary)
	switch t.op {
	case opEQ:
		return c == 0
	case opNE:
		return c != 0
	case opGT:
		return c > 0
	case opGE:
		return c >= 0
	case opLT:
		return c < 0
	case opLE:
		return c <= 0
	case opPessimisticMinor, opPessimisticPatch:
		if c < 0 {
			return false
		}
		vs, bs := v.Segments64(), t.boundary.Segments64()
		if t.op == opPessimisticMinor {
			return vs[0] == bs[0]
		}
		return vs[0] == bs[0] && vs[1] == bs[1]
	}
	return false
}

// String returns the canonical form Terraform writes into lock files:
// duplicate terms removed, sorted by boundary version and then operator,
// omitted version parts written as zero, "=" left out.
func (cs constraints) String() string {
	seen := map[string]bool{}
	var uniq constraints
	for _, t := range cs {
		k := opText[t.op] + t.text + fmt.Sprint(t.op)
		if !seen[k] {
			seen[k] = true
			uniq = append(uniq, t)
		}
	}
	slices.SortStableFunc(uniq, func(a, b term) int {
		if c := a.boundary.Compare(b.boundary); c != 0 {
			return c
		}
		if a.boundary.Metadata() != b.boundary.Metadata() {
			return strings.Compare(a.boundary.Metadata(), b.boundary.Metadata())
		}
		return int(a.op) - int(b.op)
	})
	parts := make([]string, len(uniq))
	for i, t := range uniq {
		parts[i] = opText[t.op] + t.text
	}
	return strings.Join(parts, ", ")
}

// NormalizeConstraints returns constraints in the canonical form Terraform
// writes into .terraform.lock.hcl, or an error wrapping
// ErrInvalidConstraints that names the input.
func NormalizeConstraints(s string) (string, error) {
	cs, err := parseConstraints(s)
	if err != nil {
		return "", err
	}
	return cs.String(), nil
}
