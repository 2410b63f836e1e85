package modstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/modstore"
)

func Example() {
	root, err := os.MkdirTemp("", "modstore-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	s, err := modstore.Open(root)
	if err != nil {
		panic(err)
	}
	fetch := func(ctx context.Context, dir string) error {
		// In real use: fetch the module tree into dir.
		return os.WriteFile(filepath.Join(dir, "main.tf"), []byte("# vpc 1.2.3\n"), 0o644)
	}
	for range 2 {
		dir, filled, err := s.Get(context.Background(), "vpc 1.2.3", fetch)
		if err != nil {
			panic(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "main.tf")) // read or copy out; never write
		fmt.Printf("filled=%t %s", filled, b)
	}
	fmt.Printf("%+v\n", s.Stats())
	// Output:
	// filled=true # vpc 1.2.3
	// filled=false # vpc 1.2.3
	// {Fills:1 Hits:1 Waits:0 Repairs:0 Replaces:0 Recopies:0}
}

// An upgrade fetches afresh and replaces the stored tree; readers copy
// out with Copy, which never gives half of the old tree and half of the
// new one.
func ExampleStore_Replace() {
	root, err := os.MkdirTemp("", "modstore-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	s, err := modstore.Open(root)
	if err != nil {
		panic(err)
	}
	fetch := func(version string) func(context.Context, string) error {
		return func(ctx context.Context, dir string) error {
			return os.WriteFile(filepath.Join(dir, "main.tf"), []byte("# vpc "+version+"\n"), 0o644)
		}
	}
	ctx := context.Background()
	const key = "vpc >= 1.0.0"
	if _, _, err := s.Get(ctx, key, fetch("1.0.0")); err != nil {
		panic(err)
	}
	if _, _, err := s.Replace(ctx, key, nil, fetch("1.1.0")); err != nil {
		panic(err)
	}
	dst := filepath.Join(root, "copy")
	filled, err := s.Copy(ctx, key, dst, fetch("never"))
	if err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(filepath.Join(dst, "main.tf"))
	fmt.Printf("filled=%t %s", filled, b)
	fmt.Printf("%+v\n", s.Stats())
	// Output:
	// filled=false # vpc 1.1.0
	// {Fills:2 Hits:1 Waits:0 Repairs:0 Replaces:1 Recopies:0}
}
