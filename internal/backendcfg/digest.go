package backendcfg

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// Digest hashes the backend (or cloud) blocks of a root module's
// configuration files, in HCL files (.tf, .tofu) and JSON files
// (.tf.json, .tofu.json), with the -backend-config values and the
// content of the files they name (relative to dir). early is what the
// blocks' references read where the engine evaluates them at init
// (earlyeval.Inputs.BackendDigest), "" otherwise. It gives "" when the
// files declare no backend and no cloud block.
//
// The digest is kept in records on disk: its encoding must not change.
func Digest(files []modtree.ConfigFile, dir string, backendConfig []string, early string) string {
	var blocks []string
	for _, f := range files {
		if modtree.IsJSON(f.Name) {
			blocks = append(blocks, jsonBlocks(f.Data)...)
		} else {
			blocks = append(blocks, hclBlocksOnce(f.Data)...)
		}
	}
	if len(blocks) == 0 {
		return ""
	}
	// Sorted: moving a block to another file is no change.
	slices.Sort(blocks)
	h := sha256.New()
	for _, b := range blocks {
		fmt.Fprintf(h, "block %d\n%s", len(b), b)
	}
	if early != "" {
		fmt.Fprintf(h, "early %s\n", early)
	}
	for _, bc := range backendConfig {
		fmt.Fprintf(h, "config %s\n", bc)
		p := bc
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		// A "key=value" is a file only when a file of that name exists.
		if !strings.Contains(bc, "=") || exists(p) {
			if b, err := modtree.ReadRegular(p); err == nil {
				fmt.Fprintf(h, "file %d\n", len(b))
				h.Write(b)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hclBlocksOnce is hclBlocks parsing each distinct file content once per
// process: every instance of a component has the same root files, so
// the init check of a hundred units parses them once. The memo is of a
// pure function keyed by the content, so it is never stale; it is
// bounded (all forgotten when full).
func hclBlocksOnce(src []byte) []string {
	key := sha256.Sum256(src)
	parsed.mu.Lock()
	blocks, ok := parsed.m[key]
	parsed.mu.Unlock()
	if ok {
		return blocks
	}
	blocks = hclBlocks(src)
	parsed.mu.Lock()
	if parsed.m == nil || len(parsed.m) >= parsedMax {
		parsed.m = map[[sha256.Size]byte][]string{}
	}
	parsed.m[key] = blocks
	parsed.mu.Unlock()
	return blocks
}

// parsedMax bounds the memo of hclBlocksOnce.
const parsedMax = 4096

// parsed is hclBlocksOnce's memo: an HCL file's SHA-256 to its blocks.
var parsed struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte][]string
}

// hclBlocks returns the source text of every backend and cloud block
// inside terraform blocks. A file that does not parse gives none: the
// engine reports it.
func hclBlocks(src []byte) []string {
	f, diags := hclsyntax.ParseConfig(src, "x.tf", hcl.InitialPos)
	if diags.HasErrors() {
		return nil
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var out []string
	for _, b := range body.Blocks {
		if b.Type != "terraform" {
			continue
		}
		for _, in := range b.Body.Blocks {
			if in.Type == "backend" || in.Type == "cloud" {
				r := in.Range()
				out = append(out, string(src[r.Start.Byte:r.End.Byte]))
			}
		}
	}
	return out
}

// jsonBlocks returns the backend and cloud settings of a .tf.json or
// .tofu.json file's terraform blocks (one object or a list of them),
// re-encoded canonically.
func jsonBlocks(src []byte) []string {
	var doc map[string]json.RawMessage
	if json.Unmarshal(src, &doc) != nil {
		return nil
	}
	raw, ok := doc["terraform"]
	if !ok {
		return nil
	}
	var blocks []map[string]any
	var one map[string]any
	if json.Unmarshal(raw, &one) == nil {
		blocks = []map[string]any{one}
	} else if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		for _, k := range []string{"backend", "cloud"} {
			if v, ok := b[k]; ok {
				c, _ := json.Marshal(v) // maps marshal with sorted keys
				out = append(out, k+" "+string(c))
			}
		}
	}
	return out
}

// exists reports whether p exists.
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
