package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-version"

	"github.com/tfisolate/tfisolate/internal/store"
)

// DetectTimeout bounds one run of the binary by Detect, whatever the
// caller's context allows.
const DetectTimeout = 30 * time.Second

// DetectDirPrefix names the dirs Detect creates in the temp dir (the
// binary runs in an empty dir inside). Detect holds a flock on
// DetectDirLock inside its dir for as long as it uses it, so a dir whose
// lock is free was left by a process that died while detecting, and a
// sweeper (the runner's, with its own run dirs) may remove it.
const (
	DetectDirPrefix = "tfisolate-detect-"
	DetectDirLock   = ".lock"
)

// Info describes an engine binary, as Detect found it.
type Info struct {
	Kind     Kind             // Terraform or OpenTofu
	Version  *version.Version // the version the binary reports, prerelease included ("1.10.6", "1.11.0-dev")
	Path     string           // absolute path of the binary, as given to Detect
	Platform string           // OS_ARCH the binary runs as ("linux_amd64"); "" if it does not say
}

// RegistryHost returns the registry host i's engine assumes for provider
// source addresses without one (see Kind.RegistryHost).
func (i Info) RegistryHost() string { return i.Kind.RegistryHost() }

// String describes i for logs and errors: "OpenTofu 1.10.6 (linux_amd64) at /usr/bin/tofu".
func (i Info) String() string {
	v := "?"
	if i.Version != nil {
		v = i.Version.String()
	}
	s := i.Kind.Product() + " " + v
	if i.Platform != "" {
		s += " (" + i.Platform + ")"
	}
	return s + " at " + i.Path
}

// Detect runs the binary at path once as `PATH version` and tells from its
// output which engine it is, which version and for which platform.
//
// The engine is identified by the product name its output starts with
// ("Terraform vX.Y.Z" or "OpenTofu vX.Y.Z"), not by the name of the file:
// `version -json` is not used because OpenTofu's JSON document has the
// same fields as Terraform's and does not name the product.
//
// The run gets a deadline of its own (DetectTimeout) besides ctx, an empty
// temp working directory (so no lock file there is read; see
// DetectDirPrefix), no TF_CLI_ARGS or
// TF_LOG settings and CHECKPOINT_DISABLE=1 (so it never goes online). Output
// that names neither engine is an error wrapping ErrUnrecognized that quotes
// it.
//
// Results are cached in this process by the binary's resolved path, size
// and modification time, so repeated calls for an unchanged binary do not
// run it again; calls for the same binary are serialized, so concurrent
// callers run it once. Failures are not cached.
func Detect(ctx context.Context, path string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, fmt.Errorf("detect engine %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Info{}, fmt.Errorf("detect engine %s: %w", path, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Info{}, fmt.Errorf("detect engine %s: %w", path, err)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return Info{}, fmt.Errorf("detect engine %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("detect engine %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	e := detected.entry(fileKey{path: resolved, size: fi.Size(), mtime: fi.ModTime().UnixNano()})
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return Info{}, fmt.Errorf("detect engine %s: %w", path, ctx.Err())
	}
	defer func() { <-e.sem }()
	if e.info == nil {
		info, err := runVersion(ctx, abs, DetectTimeout)
		if err != nil {
			return Info{}, fmt.Errorf("detect engine %s: %w", path, err)
		}
		e.info = &info
	}
	info := *e.info
	info.Path = abs
	// Each caller gets its own Version: go-version values can be
	// overwritten (UnmarshalText, Scan), and the cached one must not be.
	info.Version = version.Must(version.NewSemver(e.info.Version.Original()))
	return info, nil
}

// fileKey identifies one build of a binary: replacing the file changes its
// size or modification time, and with it the key.
type fileKey struct {
	path  string
	size  int64
	mtime int64
}

type cacheEntry struct {
	sem  chan struct{} // holds one token while a Detect of this key runs
	info *Info         // set once detected; read and written holding sem
}

type detectCache struct {
	mu      sync.Mutex
	entries map[fileKey]*cacheEntry
}

// detected is package state on purpose: the point is that every caller in
// the process (every runner, every unit of a Run) shares one detection per
// binary. It holds one small entry per distinct binary build.
var detected detectCache

func (c *detectCache) entry(k fileKey) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[fileKey]*cacheEntry{}
	}
	e, ok := c.entries[k]
	if !ok {
		e = &cacheEntry{sem: make(chan struct{}, 1)}
		c.entries[k] = e
	}
	return e
}

// maxOutput caps what Detect keeps of the binary's output: a real engine
// prints a few lines, a wrong binary may print anything.
const maxOutput = 64 << 10

// runVersion runs `path version` for at most timeout and parses its output.
func runVersion(parent context.Context, path string, timeout time.Duration) (Info, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	dir, lk, err := store.LockedTempDir(DetectDirPrefix, DetectDirLock)
	if err != nil {
		return Info{}, err
	}
	defer func() {
		_ = os.RemoveAll(dir)
		_ = lk.Unlock()
	}()
	wd := filepath.Join(dir, "wd")
	if err := os.Mkdir(wd, 0o700); err != nil {
		return Info{}, err
	}

	var stdout, stderr cappedBuffer
	stdout.max, stderr.max = maxOutput, 4<<10
	// `version` reads no credentials or installation settings, but an
	// engine warns about a CLI config it cannot open, and OpenTofu 1.12
	// prints that warning on stdout before its version: an empty config
	// of our own keeps the user's out of the output.
	cfg := filepath.Join(dir, "empty.tfrc")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		return Info{}, err
	}
	cmd := exec.CommandContext(ctx, path, "version")
	cmd.Dir = wd
	cmd.Env = append(versionEnv(), "TF_CLI_CONFIG_FILE="+cfg)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A wrapper script's children may keep the pipes open after the kill:
	// stop waiting for them shortly after.
	cmd.WaitDelay = 2 * time.Second
	setProcessGroup(cmd)
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			if parent.Err() == nil { // our own deadline, not the caller's
				return Info{}, fmt.Errorf("run %s version: no answer within %s: %w", path, timeout, ctx.Err())
			}
			return Info{}, fmt.Errorf("run %s version: %w", path, parent.Err())
		}
		return Info{}, fmt.Errorf("run %s version: %w: %s", path, err, quoteOutput(stderr.Bytes(), stdout.Bytes()))
	}
	kind, v, platform, err := parseVersionOutput(stdout.Bytes())
	if err != nil {
		return Info{}, fmt.Errorf("%s version: %w", path, err)
	}
	return Info{Kind: kind, Version: v, Path: path, Platform: platform}, nil
}

// versionEnv is the process environment minus what would change the output
// of `version` (extra arguments, logging, the CLI config's warnings) plus
// what keeps it offline.
func versionEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TF_CLI_ARGS") || strings.HasPrefix(kv, "TF_LOG") || strings.HasPrefix(kv, "CHECKPOINT_DISABLE=") || strings.HasPrefix(kv, "TF_CLI_CONFIG_FILE=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "CHECKPOINT_DISABLE=1")
}

var (
	headerRE   = regexp.MustCompile(`^(Terraform|OpenTofu) v(\S+)$`)
	platformRE = regexp.MustCompile(`^on ([a-z0-9]+_[a-z0-9]+)$`)
)

// parseVersionOutput reads the text output of `terraform version` or `tofu
// version`: a first line "Terraform v1.11.4" or "OpenTofu v1.10.6", usually
// a line "on linux_amd64", then optional provider lines and notices. A
// warning the engine prints before it (OpenTofu 1.12 puts a CLI config
// warning on stdout first: "Warning: ...", or the same in a box of
// "╷ │ ╵") is passed over; any other first line is not an engine's.
func parseVersionOutput(out []byte) (Kind, *version.Version, string, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	var lines []string
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "", nil, "", fmt.Errorf("%w: no output", ErrUnrecognized)
	}
	if warning(lines[0]) {
		for i, l := range lines {
			if headerRE.MatchString(l) {
				lines = lines[i:]
				break
			}
		}
	}
	m := headerRE.FindStringSubmatch(lines[0])
	if m == nil {
		return "", nil, "", fmt.Errorf("%w: want \"Terraform vX.Y.Z\" or \"OpenTofu vX.Y.Z\" first, got %s", ErrUnrecognized, quoteOutput(out))
	}
	kind := Terraform
	if m[1] == "OpenTofu" {
		kind = OpenTofu
	}
	v, err := version.NewSemver(m[2])
	if err != nil {
		return "", nil, "", fmt.Errorf("%w: %s version %q: %w", ErrUnrecognized, kind.Product(), m[2], err)
	}
	platform := ""
	if len(lines) > 1 && strings.HasPrefix(lines[1], "on ") {
		pm := platformRE.FindStringSubmatch(lines[1])
		if pm == nil {
			return "", nil, "", fmt.Errorf("%w: %s platform line %q is not \"on OS_ARCH\"", ErrUnrecognized, kind.Product(), lines[1])
		}
		platform = pm[1]
	}
	return kind, v, platform, nil
}

// warning reports whether l opens a diagnostic the engine printed before
// its version.
func warning(l string) bool {
	return strings.HasPrefix(l, "Warning:") || strings.HasPrefix(l, "╷") || strings.HasPrefix(l, "│")
}

// quoteOutput quotes the first non-empty of outs, shortened, for an error.
func quoteOutput(outs ...[]byte) string {
	for _, o := range outs {
		s := strings.TrimSpace(string(o))
		if s == "" {
			continue
		}
		if len(s) > 300 {
			s = s[:300] + "..."
		}
		return fmt.Sprintf("%q", s)
	}
	return "no output"
}

// cappedBuffer keeps the first max bytes written to it and discards the
// rest, never failing the writer (a failed write would kill the child with
// SIGPIPE and hide its real exit status).
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		b.buf.Write(p[:room])
	}
	return len(p), nil
}

func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }
