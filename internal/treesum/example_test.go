package treesum_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

func Example() {
	dir, err := os.MkdirTemp("", "treesum-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for _, name := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("abc"), 0o644); err != nil {
			panic(err)
		}
	}
	rec, err := treesum.Record(dir) // kept beside the tree, e.g. as JSON
	if err != nil {
		panic(err)
	}

	// Later, someone changes the tree.
	_ = os.WriteFile(filepath.Join(dir, "a.txt"), []byte("abcdef"), 0o644)
	_ = os.Remove(filepath.Join(dir, "b.txt"))

	_, changes, err := treesum.Check(dir, rec) // reads no file
	if err != nil {
		panic(err)
	}
	fmt.Println(changes.Damaged())
	fmt.Println(changes.Describe(treesum.Words{Tree: "the package", When: "installed"}))
	// Output:
	// true
	// a.txt has 6 bytes, 3 when installed; b.txt is missing
}
