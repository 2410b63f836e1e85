package pluginc

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// CLIConfig returns a Terraform CLI configuration that installs every
// provider present in the cache from the cache, as a filesystem_mirror in
// the unpacked layout (Terraform then symlinks the package into its data
// dir and never writes to the cache), and everything else directly. It
// never sets plugin_cache_dir: Terraform's own cache writes are not safe
// under concurrency. Call it after Ensure so the providers are present.
func (c *Cache) CLIConfig() []byte {
	provs := c.cachedProviders()
	f := hclwrite.NewEmptyFile()
	pi := f.Body().AppendNewBlock("provider_installation", nil).Body()
	if len(provs) > 0 {
		list := make([]cty.Value, len(provs))
		for i, p := range provs {
			list[i] = cty.StringVal(p)
		}
		fm := pi.AppendNewBlock("filesystem_mirror", nil).Body()
		fm.SetAttributeValue("path", cty.StringVal(filepath.ToSlash(c.dir)))
		fm.SetAttributeValue("include", cty.ListVal(list))
		pi.AppendNewBlock("direct", nil).Body().SetAttributeValue("exclude", cty.ListVal(list))
	} else {
		pi.AppendNewBlock("direct", nil)
	}
	return f.Bytes()
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
