package runner

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

	"github.com/tfisolate/tfisolate/workdir"
)

// BackendChangedError reports a unit whose backend configuration changed
// since the instance's last init while its old state may hold resources
// and neither Args.MigrateState nor Args.Reconfigure says what to do:
// reconfiguring would point the unit at another (often empty) state, and
// Apply would create everything again. It wraps ErrBackendChanged.
type BackendChangedError struct {
	Unit string
	// Old and New describe the backends: type and the settings that say
	// where the state is (bucket, key, path, ...), never credentials.
	Old, New string
}

func (e *BackendChangedError) Error() string {
	return fmt.Sprintf("the backend changed since the last init (was %s, now %s) and the old state may hold resources; "+
		"nothing ran. Set Args.MigrateState to move the state to the new backend, or Args.Reconfigure to use the new backend "+
		"as it is and leave the old state where it is", e.Old, e.New)
}

// Is makes errors.Is(err, ErrBackendChanged) true.
func (e *BackendChangedError) Is(target error) bool { return target == ErrBackendChanged }

// checkBackendChange decides whether a changed backend may be taken
// without the caller's word: only when the old state provably holds no
// resources, which the runner can tell for a local state alone.
func (x *unitRun) checkBackendChange(files []configFile) error {
	typ, cfg := recordedBackend(x.w.DataDir)
	if typ == "" || typ == "local" {
		if !workdir.MayHoldResources(localStatePath(x.dir, currentWorkspace(x.w.DataDir), cfg)) {
			return nil
		}
	}
	return &BackendChangedError{Unit: x.id, Old: describeBackend(typ, cfg), New: describeConfiguredBackend(files)}
}

// recordedBackend reads the backend terraform recorded in the data dir at
// its last init: its type and configuration; "" when there is none (the
// default local backend).
func recordedBackend(dataDir string) (string, map[string]any) {
	b, err := os.ReadFile(filepath.Join(dataDir, "terraform.tfstate"))
	if err != nil {
		return "", nil
	}
	var rec struct {
		Backend *struct {
			Type   string         `json:"type"`
			Config map[string]any `json:"config"`
		} `json:"backend"`
	}
	if json.Unmarshal(b, &rec) != nil || rec.Backend == nil {
		return "", nil
	}
	return rec.Backend.Type, rec.Backend.Config
}

// localStatePath is where the local backend with cfg keeps the state of
// workspace ws, relative paths taken from dir.
func localStatePath(dir, ws string, cfg map[string]any) string {
	str := func(k, def string) string {
		if v, ok := cfg[k].(string); ok && v != "" {
			return v
		}
		return def
	}
	p := str("path", "terraform.tfstate")
	if ws != defaultWorkspace {
		p = filepath.Join(str("workspace_dir", "terraform.tfstate.d"), ws, "terraform.tfstate")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return p
}

// backendWhereKeys are the settings that say where a backend keeps the
// state; nothing else is shown (other settings may be credentials).
var backendWhereKeys = []string{"path", "workspace_dir", "bucket", "key", "prefix", "workspace_key_prefix",
	"region", "schema_name", "container_name", "storage_account_name", "resource_group_name", "organization", "address"}

// describeBackend says which backend cfg configures, for messages.
func describeBackend(typ string, cfg map[string]any) string {
	if typ == "" {
		typ = "local"
	}
	var parts []string
	for _, k := range backendWhereKeys {
		v, ok := cfg[k].(string)
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

// describeConfiguredBackend describes the backend the root module's
// files configure now: literal settings as values, others as their
// expressions (var.state_path).
func describeConfiguredBackend(files []configFile) string {
	for _, f := range files {
		if strings.HasSuffix(f.name, ".json") {
			var doc struct {
				Terraform json.RawMessage `json:"terraform"`
			}
			if json.Unmarshal(f.data, &doc) != nil || doc.Terraform == nil {
				continue
			}
			var blocks []map[string]json.RawMessage
			var one map[string]json.RawMessage
			if json.Unmarshal(doc.Terraform, &one) == nil {
				blocks = append(blocks, one)
			} else if json.Unmarshal(doc.Terraform, &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				var backends map[string]map[string]any
				if raw, ok := b["backend"]; ok && json.Unmarshal(raw, &backends) == nil {
					for _, typ := range slices.Sorted(maps.Keys(backends)) {
						return describeBackend(typ, backends[typ])
					}
				}
			}
			continue
		}
		hf, diags := hclsyntax.ParseConfig(f.data, f.name, hcl.InitialPos)
		if diags.HasErrors() {
			continue
		}
		body, _ := hf.Body.(*hclsyntax.Body)
		if body == nil {
			continue
		}
		for _, tb := range body.Blocks {
			if tb.Type != "terraform" {
				continue
			}
			for _, in := range tb.Body.Blocks {
				if in.Type != "backend" || len(in.Labels) == 0 {
					continue
				}
				cfg := map[string]any{}
				for name, a := range in.Body.Attributes {
					if v, d := a.Expr.Value(nil); !d.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
						cfg[name] = v.AsString()
						continue
					}
					// Not a literal (early evaluation): its expression.
					r := a.Expr.Range()
					cfg[name] = string(r.SliceBytes(f.data))
				}
				return describeBackend(in.Labels[0], cfg)
			}
		}
	}
	return describeBackend("", nil)
}
