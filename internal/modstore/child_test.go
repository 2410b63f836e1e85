package modstore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// Environment of a child process.
const (
	envDir     = "MODSTORE_CHILD_DIR"     // the store directory
	envKey     = "MODSTORE_CHILD_KEY"     // the key every Get asks for
	envCount   = "MODSTORE_CHILD_COUNT"   // file each fill appends a line to
	envContent = "MODSTORE_CHILD_CONTENT" // what the fill writes into its files
	envPoint   = "MODSTORE_CHILD_POINT"   // crash role: where to stall until killed
	envResult  = "MODSTORE_CHILD_RESULT"  // race role: where to write childResult
)

// raceGoroutines is how many goroutines of one race child call Get.
const raceGoroutines = 4

// childResult is what a race child reports.
type childResult struct {
	Gets  []childGet
	Stats Stats
}

type childGet struct {
	Dir    string
	Filled bool
	Tree   map[string]string // readTree of Dir
}

// child is the body of a re-executed test binary (see childproc). Its
// inputs come from the environment; it talks to the parent through stdin
// and stdout lines.
func child(role string) error {
	s, err := Open(os.Getenv(envDir))
	if err != nil {
		return err
	}
	key, content := os.Getenv(envKey), os.Getenv(envContent)
	in := bufio.NewReader(os.Stdin)
	ctx := context.Background()
	switch role {
	case "race":
		// Every Get of this process must be past its first look at the
		// disk before this process fills or reports that it waits, so the
		// four processes' sixteen Gets provably overlap.
		slow := make(chan struct{}, raceGoroutines)
		s.testHookSlow = func() { slow <- struct{}{} }
		allIn := sync.OnceFunc(func() {
			for range raceGoroutines {
				<-slow
			}
		})
		var printWaiting sync.Once
		s.testHookWait = func() {
			allIn()
			printWaiting.Do(func() { fmt.Println("waiting") })
		}
		fill := func(ctx context.Context, dir string) error {
			appendLine(os.Getenv(envCount), fmt.Sprint(os.Getpid()))
			allIn()
			fmt.Println("filling")
			if line, _ := in.ReadString('\n'); line != "go\n" { // held until the others wait
				return fmt.Errorf("want go, got %q", line)
			}
			return writeTree(dir, content)
		}
		fmt.Println("ready")
		if line, _ := in.ReadString('\n'); line != "start\n" {
			return fmt.Errorf("want start, got %q", line)
		}
		res := childResult{Gets: make([]childGet, raceGoroutines)}
		errs := make([]error, raceGoroutines)
		var wg sync.WaitGroup
		for i := range raceGoroutines {
			wg.Go(func() {
				g := &res.Gets[i]
				if g.Dir, g.Filled, errs[i] = s.Get(ctx, key, fill); errs[i] == nil {
					g.Tree, errs[i] = readTree(g.Dir)
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		res.Stats = s.Stats()
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		return os.WriteFile(os.Getenv(envResult), b, 0o644)

	case "crash":
		point := os.Getenv(envPoint)
		stall := func(p string) {
			if p == point {
				fmt.Println("at " + p)
				select {} // until SIGKILL
			}
		}
		s.testHookPoint = stall
		_, _, err := s.Get(ctx, key, func(ctx context.Context, dir string) error {
			appendLine(os.Getenv(envCount), fmt.Sprint(os.Getpid()))
			// Half a tree, then stall: what a kill mid-fetch leaves.
			if err := os.WriteFile(filepath.Join(dir, "partial"), []byte(content), 0o644); err != nil {
				return err
			}
			stall("fill")
			if err := os.Remove(filepath.Join(dir, "partial")); err != nil {
				return err
			}
			return writeTree(dir, content)
		})
		if err != nil {
			return err
		}
		return fmt.Errorf("get returned without stalling at %q", point)

	case "replace":
		// Replace the key's entry, stalling at a point of the swap.
		point := os.Getenv(envPoint)
		s.testHookPoint = func(p string) {
			if p == point {
				fmt.Println("at " + p)
				select {} // until SIGKILL
			}
		}
		_, _, err := s.Replace(ctx, key, nil, func(ctx context.Context, dir string) error {
			appendLine(os.Getenv(envCount), fmt.Sprint(os.Getpid()))
			return writeTree(dir, content)
		})
		if err != nil {
			return err
		}
		return fmt.Errorf("replace returned without stalling at %q", point)

	case "hold":
		_, _, err := s.Get(ctx, key, func(ctx context.Context, dir string) error {
			appendLine(os.Getenv(envCount), fmt.Sprint(os.Getpid()))
			fmt.Println("filling")
			_, _ = io.Copy(io.Discard, in) // held until the parent closes stdin
			return writeTree(dir, content)
		})
		if err != nil {
			return err
		}
		fmt.Println("done")
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}

// writeTree writes the tree every test fill writes: a file, a file in a
// subdirectory, an executable, an empty directory and a symlink.
func writeTree(dir, content string) error {
	if err := os.MkdirAll(filepath.Join(dir, "sub", "empty"), 0o755); err != nil {
		return err
	}
	files := []struct {
		path string
		perm os.FileMode
	}{{"main.tf", 0o644}, {"sub/a.tf", 0o644}, {"sub/run.sh", 0o755}}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(f.path)), []byte(content+" "+f.path+"\n"), f.perm); err != nil {
			return err
		}
	}
	return os.Symlink("a.tf", filepath.Join(dir, "sub", "link.tf"))
}

// readTree returns every path of the tree at dir: file content, "dir" or
// "-> target", with permissions.
func readTree(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out[filepath.ToSlash(rel)] = "dir " + fi.Mode().Perm().String()
		case d.Type()&os.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[filepath.ToSlash(rel)] = "-> " + t
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[filepath.ToSlash(rel)] = fi.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	return out, err
}

// wantTree is readTree of what writeTree(dir, content) writes.
func wantTree(content string) map[string]string {
	return map[string]string{
		"main.tf":     "-rw-r--r-- " + content + " main.tf\n",
		"sub":         "dir -rwxr-xr-x",
		"sub/empty":   "dir -rwxr-xr-x",
		"sub/a.tf":    "-rw-r--r-- " + content + " sub/a.tf\n",
		"sub/run.sh":  "-rwxr-xr-x " + content + " sub/run.sh\n",
		"sub/link.tf": "-> a.tf",
	}
}

// appendLine appends a line with O_APPEND, which is atomic for one small
// write, so processes counting fills never lose a line.
func appendLine(p, line string) {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		panic(err)
	}
}

// countLines returns how many lines the file at p has (0 if it is absent).
func countLines(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

// startChild starts a child in role with extra environment. The timeout
// only keeps a broken test from hanging.
func startChild(t *testing.T, role string, env ...string) *childproc.Proc {
	t.Helper()
	return childproc.Start(t, role, childproc.WithEnv(env...), childproc.WithTimeout(2*time.Minute))
}

// kill SIGKILLs the child, which must still be running, and reaps it.
func kill(t *testing.T, p *childproc.Proc) {
	t.Helper()
	require.NoError(t, p.Cmd.Process.Kill())
	_ = p.Kill()
}
