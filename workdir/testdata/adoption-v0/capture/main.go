// Command capture wrote this fixture: what the release before the root's
// register of adoptions (commit 12ea26b, the parent of 0117883) leaves in
// a workdir root when instance fleet/unit-2 adopts the component's state.
// That release kept an adoption only in the instance's own record
// (ROOT/ID/.tfisolate/state.json) and never read or wrote
// ROOT/.adopted.json.
//
// It was run from that release's tree, against a component whose state
// plain terraform 1.11.4 wrote (terraform init && terraform apply in
// ../source, then .terraform removed):
//
//	git archive 12ea26b | tar -x -C /tmp/old-adopt
//	mkdir /tmp/old-adopt/cmd && cp -r capture /tmp/old-adopt/cmd/
//	(cd /tmp/old-adopt && go run ./cmd/capture SOURCE ROOT)
//
// The home it printed was copied to ../root with SOURCE written as
// @SOURCE@, and its files' modes to ../modes. The root's .locks/ID.lock
// (the lock's holder note) and empty .tmp/ are left out: they say nothing
// about adoption, and today's Prepare writes its own.
package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/workdir"
)

func main() {
	src, root := os.Args[1], os.Args[2]
	m, err := workdir.New(root)
	if err != nil {
		panic(err)
	}
	w, err := m.Prepare(context.Background(), workdir.Spec{Stack: "fleet", Instance: "unit-2", Source: src, AdoptState: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("id", w.ID, "dir", w.Dir)
	if err := w.Close(); err != nil {
		panic(err)
	}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		fi, _ := d.Info()
		fmt.Printf("%v %6d %s\n", fi.Mode(), fi.Size(), p)
		return nil
	})
}
