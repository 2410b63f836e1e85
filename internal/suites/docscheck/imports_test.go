package docscheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/tfisolate/tfisolate/"

// benches are the folders under internal/ that hold no machine of the SDK:
// the test kit, the harnesses the examples and the bench drive, and the
// suites. No production package imports them.
var benches = []string{"internal/testkit/", "internal/harness/", "internal/suites/"}

// publicPkgs are the packages a user imports.
var publicPkgs = []string{"runner", "workdir", "pluginc", "cliconfig"}

// productionImports maps each production package (its path from the
// repository root) to what its non-test files import from this module.
func productionImports(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		if !isProduction(pkg) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if out[pkg] == nil {
			out[pkg] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) {
				out[pkg][strings.TrimPrefix(p, module)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// isProduction tells the SDK's own packages: the public ones and the
// mechanisms under internal/ (the examples and bench/ are programs that
// use the SDK, and may use the harnesses).
func isProduction(pkg string) bool {
	for _, p := range publicPkgs {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return strings.HasPrefix(pkg, "internal/") && !underBench(pkg+"/")
}

func underBench(path string) bool {
	for _, b := range benches {
		if strings.HasPrefix(path, b) {
			return true
		}
	}
	return false
}

// The import rules ARCHITECTURE.md states, checked on the code: no
// production package imports the test kit, a harness or a suite; workdir
// and pluginc import neither runner nor each other; cliconfig imports no
// other public package; the mechanisms under internal/ import no public
// package, but internal/providerreqs, which returns pluginc's Requirement.
func TestArchitectureImportRules(t *testing.T) {
	imports := productionImports(t)
	if _, ok := imports["internal/queue"]; !ok || len(imports["runner"]) == 0 {
		t.Fatalf("found no imports of runner or internal/queue under %s: the walk is wrong", repoRoot)
	}
	allowed := map[string][]string{
		"workdir":               {},
		"pluginc":               {"cliconfig"},
		"cliconfig":             {},
		"internal/providerreqs": {"pluginc"},
	}
	for pkg, imps := range imports {
		for imp := range imps {
			if underBench(imp + "/") {
				t.Errorf("%s imports %s: production code never imports the test kit, a harness or a suite", pkg, imp)
			}
			if !isPublic(imp) {
				continue
			}
			if strings.HasPrefix(pkg, "internal/") || pkg == "workdir" || pkg == "pluginc" || pkg == "cliconfig" {
				if !slices.Contains(allowed[pkg], imp) {
					t.Errorf("%s imports %s, which ARCHITECTURE.md's import rules do not allow", pkg, imp)
				}
			}
		}
	}
}

func isPublic(p string) bool { return slices.Contains(publicPkgs, p) }
