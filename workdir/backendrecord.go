package workdir

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// backendRecord is the file in the data dir where terraform and OpenTofu
// keep the backend their last init configured.
const backendRecord = "terraform.tfstate"

// recordedBackend is the backend the engine recorded in dataDir at its
// last init, with the settings it resolved: -backend-config values and
// OpenTofu's early-evaluated variables ("path = "${var.env}.tfstate"")
// included, which the configuration alone does not tell. ok is false when
// no init has recorded a backend there (or the record does not parse:
// then the configuration is all there is to go by).
func recordedBackend(dataDir string) (b modtree.Backend, ok bool) {
	file := filepath.Join(dataDir, backendRecord)
	data, err := os.ReadFile(file)
	if err != nil {
		return modtree.Backend{}, false
	}
	var rec struct {
		Backend *struct {
			Type   string `json:"type"`
			Config struct {
				Path         *string `json:"path"`
				WorkspaceDir *string `json:"workspace_dir"`
			} `json:"config"`
		} `json:"backend"`
	}
	if json.Unmarshal(data, &rec) != nil || rec.Backend == nil || rec.Backend.Type == "" {
		return modtree.Backend{}, false
	}
	b = modtree.Backend{Type: rec.Backend.Type, File: file}
	if b.Local() {
		if p := rec.Backend.Config.Path; p != nil {
			b.Path = *p
		}
		if p := rec.Backend.Config.WorkspaceDir; p != nil {
			b.WorkspaceDir = *p
		}
	}
	return b, true
}

// stateBackends returns the backends whose local state places belong to
// the instance whose data dir is dataDir: the configured one, and the one
// the engine recorded at its last init when that keeps state elsewhere
// (its state stays the instance's until a migration moves it, and a path
// built from a variable or given with -backend-config is known only
// there).
func stateBackends(configured modtree.Backend, dataDir string) []modtree.Backend {
	out := []modtree.Backend{configured}
	rec, ok := recordedBackend(dataDir)
	if ok && rec.Local() && (!configured.Local() ||
		rec.StatePath() != configured.StatePath() || rec.StateWorkspaceDir() != configured.StateWorkspaceDir()) {
		out = append(out, rec)
	}
	return out
}

// instanceDataDir is the data dir (TF_DATA_DIR) of the instance at home.
func instanceDataDir(home string) string { return filepath.Join(home, metaDir, dataDir) }
