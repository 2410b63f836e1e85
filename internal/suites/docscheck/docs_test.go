package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository's top directory, two levels above this
// package.
const repoRoot = "../../.."

var (
	fence     = regexp.MustCompile("(?s)```.*?```")
	codeSpan  = regexp.MustCompile("`[^`\n]*`")
	link      = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)
	heading   = regexp.MustCompile(`(?m)^#{1,6}\s+(.*)$`)
	testName  = regexp.MustCompile(`\b((?:Test|Fuzz|Example)[A-Z][A-Za-z0-9_]*)\b`)
	notAnchor = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	funcDecl  = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Example)[A-Za-z0-9_]*)\(`)
)

// pages are the Markdown files whose links and test names are checked.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md found: the test runs from internal/suites/docscheck")
	}
	return append([]string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "ARCHITECTURE.md")}, docs...)
}

// anchors returns the anchors GitHub makes of a page's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		a := strings.ReplaceAll(notAnchor.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")
		n := seen[a]
		seen[a] = n + 1
		if n > 0 {
			a += "-" + strconv.Itoa(n)
		}
		out[a] = true
	}
	return out
}

// definedTests maps each test, fuzz target and example of the repository
// to the files that define it.
func definedTests(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(repoRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range funcDecl.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = append(out[m[1]], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDocsPointAtWhatExists(t *testing.T) {
	tests := definedTests(t)
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		name, _ := filepath.Rel(repoRoot, page)

		// Test names anywhere on the page, code included.
		for _, n := range testName.FindAllString(text, -1) {
			if len(tests[n]) == 0 {
				t.Errorf("%s names %s, which no _test.go file defines", name, n)
			}
		}

		prose := codeSpan.ReplaceAllString(fence.ReplaceAllString(text, ""), "")
		for _, m := range link.FindAllStringSubmatch(prose, -1) {
			label, target := m[1], m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			p := page
			if file != "" {
				p = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links %s, which does not exist", name, target)
				continue
			}
			if anchor != "" {
				tb, err := os.ReadFile(p)
				if err != nil || !strings.HasSuffix(p, ".md") {
					t.Errorf("%s links %s: an anchor on a file that is not a page", name, target)
				} else if !anchors(string(tb))[anchor] {
					t.Errorf("%s links %s: no heading makes the anchor %q", name, target, anchor)
				}
			}
			if strings.HasSuffix(p, ".go") {
				for _, n := range testName.FindAllString(label, -1) {
					if !definedIn(tests[n], p) {
						t.Errorf("%s links %s for %s, which that file does not define", name, target, n)
					}
				}
			}
		}
	}
}

func definedIn(files []string, p string) bool {
	for _, f := range files {
		if filepath.Clean(f) == filepath.Clean(p) {
			return true
		}
	}
	return false
}
