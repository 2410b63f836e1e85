package pluginc

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"

	"github.com/tfisolate/tfisolate/cliconfig"
)

// CLIConfig returns a Terraform CLI configuration that installs every
// provider present in the cache from the cache, as a filesystem_mirror in
// the unpacked layout at PackagesDir (Terraform then symlinks the package
// into its data dir and never writes to the cache), and everything else
// directly. It never sets plugin_cache_dir: Terraform's own cache writes
// are not safe under concurrency. Call it after Ensure so the providers
// are present.
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
		m.FilesystemMirror = []mirror{{Path: filepath.ToSlash(c.PackagesDir()), Include: provs}}
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

// CLIConfigFor returns the CLI configuration to hand Terraform in place of
// the user's own file (see cliconfig.Read and cliconfig.Find): TF_CLI_CONFIG_FILE replaces
// the user's file rather than adding to it, so what the user's terraform
// would have read must be in it. With a nil user it is CLIConfig().
//
// The user's credentials, credentials_helper and host blocks,
// disable_checkpoint settings and every other setting pass through
// unchanged (registries that need a token, a credentials helper, a host
// whose services are set by hand keep working). provider_installation is
// the cache's: every provider the cache holds comes from the cache as a
// filesystem_mirror (read-only, symlinked into the data dir), and the
// rest as the user's provider_installation says, each of its methods
// with the cached providers added to its exclude list; without a user
// provider_installation, the rest is installed directly, as by CLIConfig.
// The user's dev_overrides stay first, as Terraform requires.
//
// plugin_cache_dir is dropped and never set. Terraform writes into a
// plugin cache without a lock, unpacking straight into the final path
// (hashicorp/terraform#31964), so two inits sharing one tear each other's
// packages; the shared cache replaces it, and Terraform only ever reads
// the cache. (The TF_PLUGIN_CACHE_DIR environment variable sets the same
// thing and must not reach Terraform either.)
//
// The result is JSON, like CLIConfig, so any path and any string survive
// exactly; Terraform reads JSON CLI configs with the same HCL 1 parser.
// Call it after Ensure so the providers are present.
func (c *Cache) CLIConfigFor(user *cliconfig.File) []byte {
	if user == nil {
		return c.CLIConfig()
	}
	provs := c.cachedProviders()
	var b bytes.Buffer
	fields := 0
	// put writes one member; keys may repeat, which HCL 1's JSON parser
	// reads as repeated blocks, in order.
	put := func(key string, v any) {
		if fields > 0 {
			b.WriteByte(',')
		}
		fields++
		writeJSON(&b, key)
		b.WriteByte(':')
		writeJSON(&b, v)
	}
	b.WriteByte('{')
	if len(user.Credentials) > 0 {
		put("credentials", user.Credentials)
	}
	if len(user.CredentialsHelpers) > 0 {
		helpers := map[string]map[string][]string{}
		for name, args := range user.CredentialsHelpers {
			h := map[string][]string{}
			if args != nil {
				h["args"] = args
			}
			helpers[name] = h
		}
		put("credentials_helper", helpers)
	}
	if len(user.Hosts) > 0 {
		hosts := map[string]map[string]any{}
		for name, services := range user.Hosts {
			if services == nil {
				services = map[string]any{}
			}
			hosts[name] = map[string]any{"services": services}
		}
		put("host", hosts)
	}
	if user.DisableCheckpoint {
		put("disable_checkpoint", true)
	}
	if user.DisableCheckpointSignature {
		put("disable_checkpoint_signature", true)
	}
	keys := make([]string, 0, len(user.Other))
	for k := range user.Other {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		put(k, user.Other[k])
	}

	// provider_installation: one block whose methods are written in
	// order, each as a list of one object (HCL 1's JSON form of a block).
	if fields > 0 {
		b.WriteByte(',')
	}
	b.WriteString(`"provider_installation":[{`)
	fields = 0
	method := func(kind string, body map[string]any) { put(kind, []map[string]any{body}) }
	pi := user.ProviderInstallation
	if pi != nil && len(pi.DevOverrides) > 0 {
		put("dev_overrides", []map[string]string{pi.DevOverrides})
	}
	if len(provs) > 0 {
		method("filesystem_mirror", map[string]any{"path": filepath.ToSlash(c.PackagesDir()), "include": provs})
	}
	if pi == nil {
		direct := map[string]any{}
		if len(provs) > 0 {
			direct["exclude"] = provs
		}
		method("direct", direct)
	} else {
		for _, m := range pi.Methods {
			body := make(map[string]any, len(m.Other)+3)
			for k, v := range m.Other {
				body[k] = v
			}
			switch m.Kind {
			case "filesystem_mirror":
				body["path"] = m.Location
			case "network_mirror":
				body["url"] = m.Location
			}
			if len(m.Include) > 0 {
				body["include"] = m.Include
			}
			if exclude := slices.Concat(m.Exclude, provs); len(exclude) > 0 {
				body["exclude"] = exclude
			}
			method(m.Kind, body)
		}
	}
	b.WriteString("}]}")
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		panic(err) // written by writeJSON alone: cannot fail
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// writeJSON writes v as JSON. HTML characters stay as they are (HCL 1
// would read the escapes too, but people read these files).
func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // values decoded by HCL 1 or built here: always encodable
	}
	b.Truncate(b.Len() - 1) // Encode's newline
}

// cachedProviders lists HOST/NS/TYPE of every provider with at least one
// complete package in the cache.
func (c *Cache) cachedProviders() []string {
	var out []string
	root := c.PackagesDir()
	hosts, _ := os.ReadDir(root)
	for _, h := range hosts {
		if !h.IsDir() || h.Name()[0] == '.' {
			continue
		}
		nss, _ := os.ReadDir(filepath.Join(root, h.Name()))
		for _, ns := range nss {
			types, _ := os.ReadDir(filepath.Join(root, h.Name(), ns.Name()))
			for _, t := range types {
				if hasPackage(filepath.Join(root, h.Name(), ns.Name(), t.Name())) {
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
