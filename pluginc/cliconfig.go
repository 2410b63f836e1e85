package pluginc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
)

// CLIConfig returns a Terraform CLI configuration that installs every
// provider present in the cache from the cache, as a filesystem_mirror in
// the unpacked layout (Terraform then symlinks the package into its data
// dir and never writes to the cache), and everything else directly. It
// never sets plugin_cache_dir: Terraform's own cache writes are not safe
// under concurrency. Call it after Ensure so the providers are present.
//
// The configuration is in JSON syntax, which Terraform's CLI config parser
// reads as well as its native syntax. Terraform parses CLI configs with
// HCL 1, whose quoted strings cannot carry every path (it copies "${...}"
// through without unescaping); JSON strings carry any path exactly.
func (c *Cache) CLIConfig() []byte {
	type (
		mirror struct {
			Path    string   `json:"path"`
			Include []string `json:"include"`
		}
		direct struct {
			Exclude []string `json:"exclude,omitempty"`
		}
		method struct {
			FilesystemMirror []mirror `json:"filesystem_mirror,omitempty"`
			Direct           []direct `json:"direct"`
		}
	)
	// HCL 1's JSON form spells every block as a list of objects.
	var m method
	if provs := c.cachedProviders(); len(provs) > 0 {
		m.FilesystemMirror = []mirror{{Path: filepath.ToSlash(c.dir), Include: provs}}
		m.Direct = []direct{{Exclude: provs}}
	} else {
		m.Direct = []direct{{}}
	}
	b, err := json.MarshalIndent(map[string][]method{"provider_installation": {m}}, "", "  ")
	if err != nil {
		panic(err) // strings and slices only: cannot fail
	}
	return append(b, '\n')
}

// cachedProviders lists HOST/NS/TYPE of every provider with at least one
// complete package in the cache.
func (c *Cache) cachedProviders() []string {
	var out []string
	hosts, _ := os.ReadDir(c.dir)
	for _, h := range hosts {
		if !h.IsDir() || h.Name() == stateDir || h.Name()[0] == '.' {
			continue
		}
		nss, _ := os.ReadDir(filepath.Join(c.dir, h.Name()))
		for _, ns := range nss {
			types, _ := os.ReadDir(filepath.Join(c.dir, h.Name(), ns.Name()))
			for _, t := range types {
				if hasPackage(filepath.Join(c.dir, h.Name(), ns.Name(), t.Name())) {
					out = append(out, h.Name()+"/"+ns.Name()+"/"+t.Name())
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func hasPackage(typeDir string) bool {
	vs, _ := os.ReadDir(typeDir)
	for _, v := range vs {
		plats, _ := os.ReadDir(filepath.Join(typeDir, v.Name()))
		for _, p := range plats {
			if p.IsDir() {
				return true
			}
		}
	}
	return false
}
