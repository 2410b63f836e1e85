package pluginc_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"

	"github.com/tfisolate/tfisolate/pluginc"
)

// artifactStore is a host's own Source: provider zips it keeps in memory
// (a real one would read its artifact store or a directory its build
// writes), each with the SHA-256 its build recorded. Fetch checks the
// bytes against that record, as the built-in sources check theirs.
type artifactStore struct {
	zips map[pluginc.PackageID][]byte // by provider, version and platform
	sums map[pluginc.PackageID]string // hex SHA-256 recorded at build
}

func (s *artifactStore) String() string { return "artifact store" }

func (s *artifactStore) Versions(_ context.Context, p pluginc.Provider) ([]string, error) {
	var out []string
	for id := range s.zips {
		if id.Provider == p && !slices.Contains(out, id.Version) {
			out = append(out, id.Version)
		}
	}
	return out, nil
}

func (s *artifactStore) Fetch(_ context.Context, id pluginc.PackageID, dst *os.File) (pluginc.Fetched, error) {
	b, ok := s.zips[id]
	if !ok {
		return pluginc.Fetched{}, fmt.Errorf("%w: %s has no %s", pluginc.ErrNotFound, s, id)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != s.sums[id] {
		return pluginc.Fetched{}, fmt.Errorf("%w: %s has SHA-256 %s, the build recorded %s", pluginc.ErrChecksum, id, got, s.sums[id])
	}
	n, err := dst.Write(b)
	return pluginc.Fetched{URL: "artifact://" + id.String(), Bytes: int64(n), SHA256: s.sums[id]}, err
}

// A host's own store of provider packages is a Source like the built-in
// ones: the cache installs from it, once, with the same guarantees.
func ExampleSource() {
	p, err := pluginc.ParseProvider("example.test/acme/demo")
	if err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("terraform-provider-demo_v1.2.0")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.Write([]byte("not really a provider\n")); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	id := pluginc.PackageID{Provider: p, Version: "1.2.0", Platform: "linux_amd64"}
	sum := sha256.Sum256(buf.Bytes())
	store := &artifactStore{
		zips: map[pluginc.PackageID][]byte{id: buf.Bytes()},
		sums: map[pluginc.PackageID]string{id: hex.EncodeToString(sum[:])},
	}

	root, err := os.MkdirTemp("", "pluginc-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	cache, err := pluginc.Open(filepath.Join(root, "cache"), pluginc.WithSource(store), pluginc.WithPlatforms("linux_amd64"))
	if err != nil {
		log.Fatal(err)
	}
	pkgs, err := cache.Ensure(context.Background(), pluginc.Requirement{Provider: p, Constraints: "~> 1.0"})
	if err != nil {
		log.Fatal(err)
	}
	rel, _ := filepath.Rel(cache.PackagesDir(), pkgs[0].Dir)
	fmt.Println(filepath.ToSlash(rel))
	fmt.Println(pkgs[0].Hashes)
	// Output:
	// example.test/acme/demo/1.2.0/linux_amd64
	// [h1:3po1XJ7PA3mR4TC3qr8cHGq/NIojLza9MZhY35QjIEI=]
}
