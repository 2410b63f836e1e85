package workdir_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfisolate/tfisolate/workdir"
)

func ExampleID() {
	id, err := workdir.ID("plat-ue2-dev", "elasticache/redis-cluster-7")
	if err != nil {
		panic(err)
	}
	fmt.Println(id)

	_, err = workdir.ID("plat-ue2-dev", "../../etc")
	fmt.Println(err)
	// Output:
	// plat-ue2-dev__elasticache_redis-cluster-7-ad298ab5d694
	// invalid instance "../../etc": has a ".." path element, which escapes the root
}

func ExampleManager_Prepare() {
	tmp, _ := os.MkdirTemp("", "workdir-example-")
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "components", "elasticache")
	_ = os.MkdirAll(src, 0o755)
	_ = os.WriteFile(filepath.Join(src, "main.tf"), []byte(`resource "terraform_data" "x" {}`), 0o644)

	m, err := workdir.New(filepath.Join(tmp, "work"))
	if err != nil {
		panic(err)
	}
	w, err := m.Prepare(context.Background(), workdir.Spec{
		Stack:    "plat-ue2-dev",
		Instance: "elasticache/redis-cluster-1",
		Source:   src,
		Files:    map[string][]byte{"backend.tf.json": []byte(`{"terraform":{"backend":{"local":{}}}}`)},
	})
	if err != nil {
		panic(err)
	}
	defer w.Close() // releases the instance lock

	// Run terraform with cmd.Dir = w.Dir and w.Env() added to its environment.
	rel, _ := filepath.Rel(m.Root(), w.Dir)
	fmt.Println(filepath.ToSlash(rel))
	entries, _ := os.ReadDir(w.Dir)
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	fmt.Println(w.Env()["TF_DATA_DIR"] == w.DataDir)
	// Output:
	// plat-ue2-dev__elasticache_redis-cluster-1-e5e8a3189646/src
	// backend.tf.json
	// main.tf
	// true
}

func ExampleManager_Check() {
	tmp, _ := os.MkdirTemp("", "workdir-example-")
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "components", "elasticache")
	_ = os.MkdirAll(src, 0o755)

	m, err := workdir.New(filepath.Join(tmp, "work"))
	if err != nil {
		panic(err)
	}
	// Check every instance before starting any: no lock, no writes.
	for _, s := range []workdir.Spec{
		{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-1", Source: src},
		{Stack: "plat-ue2-dev", Instance: "elasticache/redis-cluster-2", Source: filepath.Join(tmp, "missing")},
	} {
		id, err := m.Check(s)
		if err != nil {
			fmt.Println(errors.Is(err, workdir.ErrInvalid), strings.Contains(err.Error(), "does not exist"))
			continue
		}
		fmt.Println(id)
	}
	// Output:
	// plat-ue2-dev__elasticache_redis-cluster-1-e5e8a3189646
	// true true
}
