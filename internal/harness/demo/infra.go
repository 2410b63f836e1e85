package demo

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

//go:embed infra
var infra embed.FS

const (
	// Stack is the stack every demo instance belongs to.
	Stack = "plat-ue2-dev"
	// Component is the component's directory relative to the infra root.
	Component = "components/terraform/elasticache"
	// ComponentName is what stacks call the component (metadata.component).
	ComponentName = "elasticache"
	// VPCComponent is a network component whose outputs (vpc_id,
	// subnet_ids) Component takes as its optional vpc_id and subnet_ids
	// variables.
	VPCComponent = "components/terraform/vpc"
	// OnlineComponent is the same component with a provider from the public
	// registry, for machines that are online.
	OnlineComponent = "components/terraform/elasticache-online"
)

// WriteInfra lays the embedded infra tree out under dir, rewriting only
// files whose content differs (so a second run leaves the source as it
// was), and returns the directory of Component.
func WriteInfra(dir string) (string, error) {
	err := fs.WalkDir(infra, "infra", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := infra.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("infra", filepath.FromSlash(p))
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		_, err = atomicfile.WriteFileIfChanged(dst, b, 0o644)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("write demo infra into %s: %w", dir, err)
	}
	return filepath.Join(dir, filepath.FromSlash(Component)), nil
}

// Instance is the full instance path of the i-th cluster (1-based).
func Instance(i int) string { return fmt.Sprintf("%s/redis-cluster-%d", ComponentName, i) }

// Files returns the generated files of instance i, as a stack-driven
// wrapper writes them: the backend and the instance's variables.
func Files(i int, latency time.Duration) map[string][]byte {
	return map[string][]byte{
		"backend.tf.json":            BackendJSON(),
		"terraform.auto.tfvars.json": VarsJSON(i, latency),
	}
}

// BackendJSON is the generated backend: local state in the working dir.
func BackendJSON() []byte {
	return mustJSON(map[string]any{"terraform": map[string]any{"backend": map[string]any{"local": map[string]any{}}}})
}

// VarsJSON is instance i's variables.
func VarsJSON(i int, latency time.Duration) []byte {
	return mustJSON(map[string]any{
		"name":            fmt.Sprintf("%s-redis-cluster-%d", Stack, i),
		"latency_seconds": latency.Seconds(),
	})
}

// Units returns n units, elasticache/redis-cluster-1..n of the component
// at source, in Stack.
func Units(source string, n int, latency time.Duration) []runner.Unit {
	units := make([]runner.Unit, n)
	for i := range units {
		units[i] = runner.Unit{Workdir: workdir.Spec{
			Stack:    Stack,
			Instance: Instance(i + 1),
			Source:   source,
			Files:    Files(i+1, latency),
		}}
	}
	return units
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // static shapes of maps and strings: cannot fail
	}
	return append(b, '\n')
}
