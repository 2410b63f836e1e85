package pluginc

import (
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-version"
)

func FuzzParseProvider(f *testing.F) {
	for _, s := range []string{"hashicorp/aws", "aws", "registry.tfisolate.test/tfisolate/tfitest",
		"Example.COM/NS/Type", "a/b/c/d", "", "terraform-provider-x", "-/aws", "xn--n3h.example/ns/t", "host:8443/ns/t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseProvider(s)
		if err != nil {
			if !strings.Contains(err.Error(), "invalid provider address") {
				t.Fatalf("error without the sentinel's text: %v", err)
			}
			return
		}
		if p.Hostname == "" || p.Namespace == "" || p.Type == "" {
			t.Fatalf("ParseProvider(%q) = %+v: empty part", s, p)
		}
		// The canonical form parses back to itself.
		q, err := ParseProvider(p.String())
		if err != nil || q != p {
			t.Fatalf("round trip of %q: %+v -> %q -> %+v, %v", s, p, p.String(), q, err)
		}
	})
}

// FuzzGrammar: UnderscoreNamespaces accepts every address
// DashNamespaces accepts, as the same Provider, and more only by an
// underscore in the namespace; under either, an accepted namespace never
// starts or ends with a dash or an underscore, a type never holds an
// underscore, and the canonical form parses back to itself.
func FuzzGrammar(f *testing.F) {
	for _, s := range []string{"registry.example.test/my_org/foo", "my_org/foo", "_org/foo", "org_/foo", "a_-b/t",
		"Ex.Test/My_Org/T", "my-org/foo", "ns/foo_bar", "x_y.example/ns/t", "ns/t", "\u00df_a/t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		dash, derr := DashNamespaces.Parse(s)
		unde, uerr := UnderscoreNamespaces.Parse(s)
		if derr == nil && (uerr != nil || unde != dash) {
			t.Fatalf("%q: dash namespaces give %+v, underscore namespaces %+v, %v", s, dash, unde, uerr)
		}
		if uerr != nil {
			return
		}
		if derr != nil && !strings.Contains(unde.Namespace, "_") {
			t.Fatalf("%q: only underscore namespaces accept it (%+v), but its namespace has no underscore: %v", s, unde, derr)
		}
		for _, c := range "-_" {
			if strings.HasPrefix(unde.Namespace, string(c)) || strings.HasSuffix(unde.Namespace, string(c)) {
				t.Fatalf("%q: namespace %q starts or ends with %q", s, unde.Namespace, c)
			}
		}
		if strings.Contains(unde.Type, "_") {
			t.Fatalf("%q: type %q holds an underscore", s, unde.Type)
		}
		for g, p := range map[Grammar]Provider{UnderscoreNamespaces: unde, DashNamespaces: dash} {
			if g == DashNamespaces && derr != nil {
				continue
			}
			if q, err := g.Parse(p.String()); err != nil || q != p {
				t.Fatalf("round trip of %q under %v: %+v -> %q -> %+v, %v", s, g, p, p.String(), q, err)
			}
		}
	})
}

func FuzzConstraints(f *testing.F) {
	for _, s := range []string{"~> 5.0", ">= 1.2, < 2.0", "= 1.0.0", "!= 1.3.0", "1.2.3-beta+x", "~> 1", "", ">=1,<=3", "~> 1.2.3, != 1.2.4"} {
		f.Add(s, "1.2.5")
	}
	f.Fuzz(func(t *testing.T, s, vs string) {
		cs, err := parseConstraints(s)
		if err != nil {
			return
		}
		canon := cs.String()
		cs2, err := parseConstraints(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, s, err)
		}
		if cs2.String() != canon {
			t.Fatalf("canonical form is not stable: %q -> %q -> %q", s, canon, cs2.String())
		}
		v, err := version.NewSemver(vs)
		if err != nil {
			return
		}
		if cs.allows(v) != cs2.allows(v) {
			t.Fatalf("%q and its canonical form %q disagree on %s", s, canon, v)
		}
	})
}

func FuzzLockFile(f *testing.F) {
	f.Add("registry.tfisolate.test/tfisolate/tfitest", "1.1.0", "~> 1.0", "h1:abc=", "zh:0123", "example.test/a/b", "0.0.1")
	f.Add("hashicorp/aws", "5.0.0", "", "zh:x", "h1:y", "aws", "5.0.0")
	f.Fuzz(func(t *testing.T, addr1, v1, cons, h1, h2, addr2, v2 string) {
		var pkgs []Package
		for _, e := range [][2]string{{addr1, v1}, {addr2, v2}} {
			p, err := ParseProvider(e[0])
			if err != nil {
				return
			}
			if _, err := parseVersion(e[1]); err != nil {
				return
			}
			pkgs = append(pkgs, Package{Provider: p, Version: e[1], Hashes: []string{h1, h2}})
		}
		canon, err := NormalizeConstraints(cons)
		if err != nil {
			return
		}
		pkgs[0].Constraints = canon
		out := LockFile(pkgs)
		locks, err := ParseLockFile(out)
		if err != nil {
			t.Fatalf("LockFile output does not parse: %v\n%s", err, out)
		}
		// Writing the parsed locks again gives the same bytes.
		var again []Package
		for _, l := range locks {
			again = append(again, Package{Provider: l.Provider, Version: l.Version, Constraints: l.Constraints, Hashes: l.Hashes})
		}
		if got := LockFile(again); string(got) != string(out) {
			t.Fatalf("lock file does not round-trip:\n%s\n---\n%s", out, got)
		}
		// Valid hashes are written exactly; anything else is left out.
		for _, h := range []string{h1, h2} {
			found := false
			for _, l := range locks {
				found = found || slices.Contains(l.Hashes, h)
			}
			if found != validHash(h) {
				t.Fatalf("hash %q (valid: %v) in the parsed lock file: %v\n%s", h, validHash(h), found, out)
			}
		}
	})
}
