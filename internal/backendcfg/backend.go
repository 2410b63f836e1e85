package backendcfg

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// Backend is one backend: its type and its settings.
type Backend struct {
	// Type is the backend's type label ("local", "s3", ...); "" when
	// there is none, which the engine takes for the local backend with
	// its defaults.
	Type string
	// settings are the backend's settings by name: values as the engine
	// recorded them, or as the files give them (see Configured).
	settings map[string]any
}

// Recorded reads the backend the engine recorded in the data dir
// dataDir at its last init (its terraform.tfstate): its type and
// settings. A data dir with no record, or a record that does not read,
// gives the zero Backend (the default local backend).
func Recorded(dataDir string) Backend {
	b, err := os.ReadFile(filepath.Join(dataDir, "terraform.tfstate"))
	if err != nil {
		return Backend{}
	}
	var rec struct {
		Backend *struct {
			Type   string         `json:"type"`
			Config map[string]any `json:"config"`
		} `json:"backend"`
	}
	if json.Unmarshal(b, &rec) != nil || rec.Backend == nil {
		return Backend{}
	}
	return Backend{Type: rec.Backend.Type, settings: rec.Backend.Config}
}

// Configured reads the backend block the root module's files configure
// now: the first one found, in the order of files. A setting that is a
// literal string is its value; any other (a reference evaluated at init,
// var.state_path) is its expression's source text. A file that does not
// parse is passed over; no backend block gives the zero Backend. A cloud
// block is not read.
func Configured(files []modtree.ConfigFile) Backend {
	for _, f := range files {
		if modtree.IsJSON(f.Name) {
			if b, ok := jsonBackend(f.Data); ok {
				return b
			}
			continue
		}
		if b, ok := hclBackend(f.Name, f.Data); ok {
			return b
		}
	}
	return Backend{}
}

// jsonBackend reads the first backend of a .tf.json or .tofu.json file's
// terraform blocks (one object or a list of them); of several types in
// one block, the first by name.
func jsonBackend(src []byte) (Backend, bool) {
	var doc struct {
		Terraform json.RawMessage `json:"terraform"`
	}
	if json.Unmarshal(src, &doc) != nil || doc.Terraform == nil {
		return Backend{}, false
	}
	var blocks []map[string]json.RawMessage
	var one map[string]json.RawMessage
	if json.Unmarshal(doc.Terraform, &one) == nil {
		blocks = append(blocks, one)
	} else if json.Unmarshal(doc.Terraform, &blocks) != nil {
		return Backend{}, false
	}
	for _, b := range blocks {
		var backends map[string]map[string]any
		if raw, ok := b["backend"]; ok && json.Unmarshal(raw, &backends) == nil {
			for _, typ := range slices.Sorted(maps.Keys(backends)) {
				return Backend{Type: typ, settings: backends[typ]}, true
			}
		}
	}
	return Backend{}, false
}

// hclBackend reads the first labelled backend block of an HCL file's
// terraform blocks.
func hclBackend(name string, src []byte) (Backend, bool) {
	hf, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return Backend{}, false
	}
	body, _ := hf.Body.(*hclsyntax.Body)
	if body == nil {
		return Backend{}, false
	}
	for _, tb := range body.Blocks {
		if tb.Type != "terraform" {
			continue
		}
		for _, in := range tb.Body.Blocks {
			if in.Type != "backend" || len(in.Labels) == 0 {
				continue
			}
			settings := map[string]any{}
			for key, a := range in.Body.Attributes {
				if v, d := a.Expr.Value(nil); !d.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
					settings[key] = v.AsString()
					continue
				}
				// Not a literal (early evaluation): its expression.
				r := a.Expr.Range()
				settings[key] = string(r.SliceBytes(src))
			}
			return Backend{Type: in.Labels[0], settings: settings}, true
		}
	}
	return Backend{}, false
}

// Local reports whether b keeps the state in local files: the local
// backend, named or implied.
func (b Backend) Local() bool { return b.Type == "" || b.Type == "local" }

// defaultWorkspace is the engine's workspace when none was selected.
const defaultWorkspace = "default"

// LocalStatePath is where b, taken as the local backend, keeps the state
// of the workspace named workspace: its path setting (default
// terraform.tfstate) for the default workspace, else
// WORKSPACE_DIR/workspace/terraform.tfstate (default workspace dir
// terraform.tfstate.d); a relative path is taken from dir.
func (b Backend) LocalStatePath(dir, workspace string) string {
	str := func(k, def string) string {
		if v, ok := b.settings[k].(string); ok && v != "" {
			return v
		}
		return def
	}
	p := str("path", "terraform.tfstate")
	if workspace != defaultWorkspace {
		p = filepath.Join(str("workspace_dir", "terraform.tfstate.d"), workspace, "terraform.tfstate")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return p
}

// whereKeys are the settings that say where a backend keeps the state;
// nothing else is shown (other settings may be credentials).
var whereKeys = []string{"path", "workspace_dir", "bucket", "key", "prefix", "workspace_key_prefix",
	"region", "schema_name", "container_name", "storage_account_name", "resource_group_name", "organization", "address"}

// String describes b in one line, for messages: its quoted type and the
// settings that say where the state is, never any other (credentials).
// An address is shown without its user info and query.
func (b Backend) String() string {
	typ := b.Type
	if typ == "" {
		typ = "local"
	}
	var parts []string
	for _, k := range whereKeys {
		v, ok := b.settings[k].(string)
		if !ok || v == "" {
			continue
		}
		if k == "address" {
			if u, err := url.Parse(v); err == nil {
				u.User, u.RawQuery = nil, ""
				v = u.String()
			}
		}
		parts = append(parts, k+"="+v)
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%q", typ)
	}
	return fmt.Sprintf("%q (%s)", typ, strings.Join(parts, ", "))
}
