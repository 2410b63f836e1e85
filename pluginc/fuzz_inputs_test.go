package pluginc

import (
	"archive/zip"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-version"
	tfaddr "github.com/hashicorp/terraform-registry-address"
)

// FuzzParseLockFile feeds ParseLockFile arbitrary bytes: an error wrapping
// ErrInvalidLockFile, or locks that are valid (parseable address and
// version, canonical constraints) and survive LockFile and a second parse.
func FuzzParseLockFile(f *testing.F) {
	f.Add([]byte(`# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "registry.tfisolate.test/tfisolate/tfitest" {
  version     = "1.1.0"
  constraints = "~> 1.0"
  hashes = [
    "h1:abc=",
    "zh:0123",
  ]
}
`))
	f.Add([]byte(`provider "hashicorp/aws" { version = "5.0.0" }`))
	// The same provider twice: once implied, once with the default host.
	f.Add([]byte(`provider "a/b" { version = "1.0.0" }
provider "` + tfaddr.DefaultProviderRegistryHost.String() + `/a/b" { version = "1.0.0" }`))
	f.Add([]byte(`provider "x/y" {
  version = "1.0"
}`))
	f.Add([]byte(`provider "x/y" {
  version = "1.0.0-beta.1+build"
  constraints = ">= 1.0.0-beta.1, != 2, ~> 1"
  hashes = []
}
module "m" {}
`))
	f.Add([]byte(`provider "x/y" { version = "${var.v}" }`))
	f.Add([]byte("provider \"x/y\" {\n  version = \"1.0.0\"\n  hashes = [\"h1:a\", \"h1:a\"]\n}\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, src []byte) {
		locks, err := ParseLockFile(src)
		if err != nil {
			if !errors.Is(err, ErrInvalidLockFile) {
				t.Fatalf("error does not wrap ErrInvalidLockFile: %v", err)
			}
			return
		}
		pkgs := make([]Package, len(locks))
		for i, l := range locks {
			if l.Provider.IsZero() {
				t.Fatalf("lock %d has no provider", i)
			}
			if _, err := parseVersion(l.Version); err != nil {
				t.Fatalf("lock of %s has version %q: %v", l.Provider, l.Version, err)
			}
			if canon, err := NormalizeConstraints(l.Constraints); err != nil || canon != l.Constraints {
				t.Fatalf("lock of %s has constraints %q, canonical %q (%v)", l.Provider, l.Constraints, canon, err)
			}
			pkgs[i] = Package{Provider: l.Provider, Version: l.Version, Constraints: l.Constraints, Hashes: l.Hashes}
		}
		out := LockFile(pkgs)
		again, err := ParseLockFile(out)
		if err != nil {
			t.Fatalf("LockFile of parsed locks does not parse: %v\n%s", err, out)
		}
		if len(again) != len(locks) {
			t.Fatalf("%d locks became %d:\n%s", len(locks), len(again), out)
		}
		byProvider := map[Provider]Lock{}
		for _, l := range again {
			byProvider[l.Provider] = l
		}
		for _, l := range locks {
			g, ok := byProvider[l.Provider]
			if !ok || g.Version != l.Version || g.Constraints != l.Constraints || !slices.Equal(g.Hashes, sortedUnique(l.Hashes)) {
				t.Fatalf("lock of %s changed through LockFile: %+v -> %+v\n%s", l.Provider, l, g, out)
			}
		}
	})
}

// FuzzSelectVersion checks version selection against its definition: the
// newest available version the constraints allow, a pre-release only when
// a term names it exactly, and an error wrapping ErrNoMatchingVersion that
// names the constraints when there is none.
func FuzzSelectVersion(f *testing.F) {
	f.Add("~> 1.0", "1.0.0,1.1.0,2.0.0")
	f.Add(">= 1.2, < 2.0", "1.2.0,1.9.9,2.0.0-rc1,2.0.0")
	f.Add("= 2.0.0-rc1", "1.0.0,2.0.0-rc1")
	f.Add("~> 1.2.3, != 1.2.4", "1.2.3,1.2.4,1.2.5,1.3.0")
	f.Add("", "0.1.0,0.2.0-beta")
	f.Add("> 5", "1.0.0")
	f.Add("1.0.0+meta", "1.0.0,1.0.0+other")
	f.Fuzz(func(t *testing.T, cons, list string) {
		cs, err := parseConstraints(cons)
		if err != nil {
			if !errors.Is(err, ErrInvalidConstraints) {
				t.Fatalf("error does not wrap ErrInvalidConstraints: %v", err)
			}
			return
		}
		var avail []*version.Version
		for s := range strings.SplitSeq(list, ",") {
			if v, err := parseVersion(s); err == nil {
				avail = append(avail, v)
			}
		}
		p := Provider{Hostname: "example.test", Namespace: "ns", Type: "t"}
		got, err := selectVersion(p, avail, cs)
		for _, v := range avail {
			if !cs.allows(v) {
				continue
			}
			if err != nil {
				t.Fatalf("%q allows %s, yet: %v", cons, v, err)
			}
			if v.GreaterThan(got) {
				t.Fatalf("%q selected %s over the newer %s", cons, got, v)
			}
		}
		if err != nil {
			if !errors.Is(err, ErrNoMatchingVersion) || !strings.Contains(err.Error(), cs.String()) {
				t.Fatalf("unclear error: %v", err)
			}
			return
		}
		if !cs.allows(got) {
			t.Fatalf("%q selected %s, which it does not allow", cons, got)
		}
		if got.Prerelease() != "" && !slices.ContainsFunc(cs, func(tm term) bool {
			return tm.op == opEQ && tm.boundary.Equal(got) && tm.boundary.Prerelease() == got.Prerelease()
		}) {
			t.Fatalf("%q selected the pre-release %s without naming it", cons, got)
		}
	})
}

// fuzzZipEntry is one entry of a fuzzed package archive.
type fuzzZipEntry struct {
	name string
	mode fs.FileMode
	body []byte
}

// FuzzUnzip unpacks archives with arbitrary entry names, modes and bodies
// (and arbitrary bytes as archives): an error, or files only inside the
// target dir; never a panic, a write outside it, a link or a special file.
func FuzzUnzip(f *testing.F) {
	for _, s := range []struct {
		n1, n2 string
		m1, m2 uint32
	}{
		{"terraform-provider-x_v1.0.0", "LICENSE", 0o755, 0o644},
		{"../evil", "ok", 0o644, 0o644},
		{"a/../../evil", "ok", 0o644, 0o644},
		{"/abs", "ok", 0o644, 0o644},
		{`..\evil`, "ok", 0o644, 0o644},
		{"link", "link/x", uint32(fs.ModeSymlink | 0o777), 0o644},
		{"d/", "d/f", uint32(fs.ModeDir | 0o755), 0o644},
		{"f", "f/g", 0o644, 0o644},
		{"same", "same", 0o644, 0o644},
		{".", "./x", uint32(fs.ModeDir | 0o755), 0o644},
		{"fifo", "dev", uint32(fs.ModeNamedPipe | 0o644), uint32(fs.ModeDevice | 0o644)},
		{"C:/x", "c:\\y", 0o644, 0o644},
	} {
		f.Add(s.n1, s.m1, []byte("one"), s.n2, s.m2, []byte("two"), []byte(nil))
	}
	f.Add("", uint32(0), []byte(nil), "", uint32(0), []byte(nil), []byte("PK\x03\x04 not really a zip"))
	f.Fuzz(func(t *testing.T, n1 string, m1 uint32, b1 []byte, n2 string, m2 uint32, b2 []byte, raw []byte) {
		archive := raw
		var entries []fuzzZipEntry
		if len(raw) == 0 {
			entries = []fuzzZipEntry{{n1, fs.FileMode(m1), b1}, {n2, fs.FileMode(m2), b2}}
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			for _, e := range entries {
				h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
				h.SetMode(e.mode)
				w, err := zw.CreateHeader(h)
				if err != nil {
					return // archive/zip refuses to write it; nothing to unpack
				}
				if _, err := w.Write(e.body); err != nil {
					return
				}
			}
			if err := zw.Close(); err != nil {
				return
			}
			archive = buf.Bytes()
		}
		parent := t.TempDir()
		zipPath := filepath.Join(parent, "p.zip")
		if err := os.WriteFile(zipPath, archive, 0o600); err != nil {
			t.Fatal(err)
		}
		zf, err := os.Open(zipPath)
		if err != nil {
			t.Fatal(err)
		}
		defer zf.Close()
		dir := filepath.Join(parent, "pkg")
		err = unzip(zf, dir, unzipOptions{})

		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if e.Name() != "p.zip" && e.Name() != "pkg" {
				t.Fatalf("unzip wrote %q outside the package dir (err %v)", e.Name(), err)
			}
		}
		// Whatever was unpacked, even before an error, is regular files
		// and dirs inside dir.
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, werr error) error {
			if werr != nil {
				return nil
			}
			if !d.Type().IsRegular() && !d.IsDir() {
				t.Fatalf("unzip created %s of type %v (err %v)", p, d.Type(), err)
			}
			return nil
		})
		if err != nil {
			var pe *fs.PathError
			if !errors.Is(err, ErrBadPackage) && !errors.As(err, &pe) {
				t.Fatalf("unclear error: %v", err)
			}
			return
		}
		// Success: every regular entry is there with its content.
		for _, e := range entries {
			if !e.mode.IsRegular() {
				continue
			}
			got, rerr := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.name)))
			if rerr != nil || !bytes.Equal(got, e.body) {
				t.Fatalf("entry %q: got %q (%v), want %q", e.name, got, rerr, e.body)
			}
		}
	})
}
