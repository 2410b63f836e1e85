package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/engine"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

func TestParseVersionOutput(t *testing.T) {
	for _, tc := range []struct {
		name     string
		out      string
		kind     engine.Kind
		version  string
		platform string
		err      string // substring of the error; "" means success
	}{
		// Terraform.
		{name: "terraform", out: "Terraform v1.11.4\non linux_amd64\n", kind: engine.Terraform, version: "1.11.4", platform: "linux_amd64"},
		{name: "terraform with providers", out: "Terraform v1.5.7\non darwin_arm64\n+ provider example.test/acme/demo v1.0.0\n", kind: engine.Terraform, version: "1.5.7", platform: "darwin_arm64"},
		{name: "terraform prerelease", out: "Terraform v1.12.0-alpha20250312\non linux_arm64\n", kind: engine.Terraform, version: "1.12.0-alpha20250312", platform: "linux_arm64"},
		{name: "terraform 0.12 without platform", out: "Terraform v0.12.31\n", kind: engine.Terraform, version: "0.12.31"},
		{name: "terraform outdated notice", out: "Terraform v1.3.0\non linux_amd64\n\nYour version of Terraform is out of date! The latest version\nis 1.11.4. You can update by downloading from the releases site\n", kind: engine.Terraform, version: "1.3.0", platform: "linux_amd64"},
		{name: "terraform crlf", out: "Terraform v1.11.4\r\non windows_amd64\r\n", kind: engine.Terraform, version: "1.11.4", platform: "windows_amd64"},
		// OpenTofu.
		{name: "tofu", out: "OpenTofu v1.10.6\non linux_amd64\n", kind: engine.OpenTofu, version: "1.10.6", platform: "linux_amd64"},
		{name: "tofu dev build", out: "OpenTofu v1.10.6-dev\non linux_amd64\n", kind: engine.OpenTofu, version: "1.10.6-dev", platform: "linux_amd64"},
		{name: "tofu with providers", out: "OpenTofu v1.6.0\non darwin_amd64\n+ provider example.test/acme/demo v2.1.0\n", kind: engine.OpenTofu, version: "1.6.0", platform: "darwin_amd64"},
		{name: "leading blank lines", out: "\n\nOpenTofu v1.9.0\non freebsd_386\n", kind: engine.OpenTofu, version: "1.9.0", platform: "freebsd_386"},
		// OpenTofu 1.12 warns about a missing CLI config on stdout, first.
		{name: "tofu 1.12 warning first", out: "Warning: Unable to open CLI configuration file\n\nThe CLI configuration file at \"/root/.terraformrc\" does not exist.\nOpenTofu v1.12.6\non linux_amd64\n", kind: engine.OpenTofu, version: "1.12.6", platform: "linux_amd64"},
		{name: "boxed warning first", out: "╷\n│ Warning: Unable to open CLI configuration file\n│\n╵\nTerraform v1.16.0\non linux_amd64\n", kind: engine.Terraform, version: "1.16.0", platform: "linux_amd64"},
		{name: "warning and no engine", out: "Warning: something\nUsage: terraform\n", err: "Warning: something"},
		// Garbage.
		{name: "empty", out: "", err: "no output"},
		{name: "blank", out: " \n\n\t\n", err: "no output"},
		{name: "json", out: `{"terraform_version": "1.11.4", "platform": "linux_amd64"}`, err: `want "Terraform vX.Y.Z" or "OpenTofu vX.Y.Z" first`},
		{name: "other product", out: "Terragrunt v0.50.0\n", err: "Terragrunt v0.50.0"},
		{name: "lower case", out: "terraform v1.0.0\n", err: "terraform v1.0.0"},
		{name: "no v", out: "Terraform 1.11.4\n", err: "Terraform 1.11.4"},
		{name: "trailing words", out: "OpenTofu v1.10.6 (dev)\n", err: "OpenTofu v1.10.6 (dev)"},
		{name: "bad version", out: "Terraform vnext\non linux_amd64\n", err: `Terraform version "next"`},
		{name: "bad platform", out: "OpenTofu v1.10.6\non linux amd64\n", err: `platform line "on linux amd64"`},
		{name: "usage", out: "Usage: terraform [global options] <subcommand> [args]\n", err: "Usage: terraform"},
		{name: "binary", out: "\x7fELF\x02\x01\x01\x00", err: "unrecognized version output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, v, platform, err := engine.ParseVersionOutput([]byte(tc.out))
			if tc.err != "" {
				require.ErrorIs(t, err, engine.ErrUnrecognized)
				require.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.kind, kind)
			require.Equal(t, tc.version, v.String())
			require.Equal(t, tc.platform, platform)
		})
	}
}

// fakeEngine writes a script that counts its runs in a file beside it and
// prints out. It returns the script's path and a function reading the count.
func fakeEngine(t *testing.T, out string) (string, func() int) {
	t.Helper()
	dir := t.TempDir()
	counter := filepath.Join(dir, "runs")
	p := writeScript(t, dir, "engine", "echo run >> '"+counter+"'\nprintf '%s' '"+out+"'")
	return p, func() int {
		b, err := os.ReadFile(counter)
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(b), "run\n")
	}
}

func TestDetectFake(t *testing.T) {
	p, runs := fakeEngine(t, "OpenTofu v1.10.6\non plan9_amd64\n")
	info, err := engine.Detect(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, engine.OpenTofu, info.Kind)
	require.Equal(t, "1.10.6", info.Version.String())
	require.Equal(t, "plan9_amd64", info.Platform)
	require.Equal(t, p, info.Path)
	require.Equal(t, engine.OpenTofu.RegistryHost(), info.RegistryHost())
	require.Equal(t, "OpenTofu 1.10.6 (plan9_amd64) at "+p, info.String())
	require.Equal(t, 1, runs())
}

// Detect runs an unchanged binary once per process, even when many callers
// ask at once, and again once the file changes.
func TestDetectCache(t *testing.T) {
	p, runs := fakeEngine(t, "Terraform v1.11.4\non linux_amd64\n")
	var wg sync.WaitGroup
	infos := make([]engine.Info, 8)
	errs := make([]error, len(infos))
	for i := range infos {
		wg.Go(func() { infos[i], errs[i] = engine.Detect(context.Background(), p) })
	}
	wg.Wait()
	for i := range infos {
		require.NoError(t, errs[i])
		require.Equal(t, engine.Terraform, infos[i].Kind)
		require.Equal(t, "1.11.4", infos[i].Version.String())
	}
	require.Equal(t, 1, runs())

	// A symlink to the same file shares the entry but keeps its own Path.
	link := filepath.Join(t.TempDir(), "terraform")
	require.NoError(t, os.Symlink(p, link))
	info, err := engine.Detect(context.Background(), link)
	require.NoError(t, err)
	require.Equal(t, link, info.Path)
	require.Equal(t, 1, runs())

	// Replacing the binary (a new size) makes Detect run it again.
	counter := filepath.Join(filepath.Dir(p), "runs")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho run >> '"+counter+"'\necho 'Terraform v1.12.0'\n"), 0o755))
	info, err = engine.Detect(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, "1.12.0", info.Version.String())
	require.Empty(t, info.Platform)
	require.Equal(t, 2, runs())
}

// Failures are not cached: a binary that failed once is run again.
func TestDetectErrors(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "terraform")
		_, err := engine.Detect(context.Background(), p)
		require.ErrorIs(t, err, os.ErrNotExist)
		require.Contains(t, err.Error(), p)
	})
	t.Run("directory", func(t *testing.T) {
		p := t.TempDir()
		_, err := engine.Detect(context.Background(), p)
		require.ErrorContains(t, err, p+": not a regular file")
	})
	t.Run("garbage", func(t *testing.T) {
		p, runs := fakeEngine(t, "hello world\n")
		for range 2 {
			_, err := engine.Detect(context.Background(), p)
			require.ErrorIs(t, err, engine.ErrUnrecognized)
			require.Contains(t, err.Error(), p)
			require.Contains(t, err.Error(), `"hello world"`)
		}
		require.Equal(t, 2, runs())
	})
	t.Run("exit status", func(t *testing.T) {
		p := writeScript(t, t.TempDir(), "terraform", "echo 'Terraform v1.0.0'\necho 'boom: no such thing' >&2\nexit 3")
		_, err := engine.Detect(context.Background(), p)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, 3, ee.ExitCode())
		require.Contains(t, err.Error(), p)
		require.Contains(t, err.Error(), "boom: no such thing")
	})
	t.Run("canceled", func(t *testing.T) {
		p, runs := fakeEngine(t, "Terraform v1.0.0\n")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := engine.Detect(ctx, p)
		require.ErrorIs(t, err, context.Canceled)
		require.Contains(t, err.Error(), p)
		require.Equal(t, 0, runs())
	})
}

// The binary runs with exactly the argument "version", offline
// (CHECKPOINT_DISABLE=1), without the user's TF_CLI_ARGS or TF_LOG, and in
// an empty directory, so a lock file where the caller stands is not read.
func TestDetectEnvironment(t *testing.T) {
	t.Setenv("TF_CLI_ARGS", "-no-color")
	t.Setenv("TF_CLI_ARGS_version", "-json")
	t.Setenv("TF_LOG", "trace")
	t.Setenv("CHECKPOINT_DISABLE", "")
	t.Setenv("TF_CLI_CONFIG_FILE", filepath.Join(t.TempDir(), "missing.tfrc"))
	p := writeScript(t, t.TempDir(), "terraform", `
if [ "$#" != 1 ] || [ "$1" != version ]; then echo "args: $*" >&2; exit 1; fi
if [ ! -f "$TF_CLI_CONFIG_FILE" ] || [ -s "$TF_CLI_CONFIG_FILE" ]; then echo "not an empty CLI config: $TF_CLI_CONFIG_FILE" >&2; exit 1; fi
if [ "$CHECKPOINT_DISABLE" != 1 ]; then echo "checkpoint on" >&2; exit 1; fi
if [ -n "$TF_CLI_ARGS$TF_CLI_ARGS_version$TF_LOG" ]; then echo "user settings leaked" >&2; exit 1; fi
if [ -n "$(ls -A)" ]; then echo "dir not empty" >&2; exit 1; fi
echo 'Terraform v1.11.4'`)
	info, err := engine.Detect(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, engine.Terraform, info.Kind)
}

// A binary that never answers is stopped at the deadline (the caller's or
// Detect's own) with an error saying so, children included.
func TestDetectDeadline(t *testing.T) {
	p := writeScript(t, t.TempDir(), "terraform", "sleep 120 &\nexec sleep 120")

	_, err := engine.RunVersion(context.Background(), p, 200*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "no answer within 200ms")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = engine.Detect(ctx, p)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotContains(t, err.Error(), "no answer within")
}

// Detect identifies the real engines, and agrees with what each says in
// `version -json`, which itself does not name the engine: OpenTofu's
// document has Terraform's field names and never says "OpenTofu".
func TestDetectReal(t *testing.T) {
	// A CLI config that does not exist (the machine's own may be one):
	// OpenTofu 1.12 warns about it on stdout before its version.
	t.Setenv("TF_CLI_CONFIG_FILE", filepath.Join(t.TempDir(), "missing.tfrc"))
	testenv.Engines(t, func(t *testing.T, e testenv.Engine) {
		info, err := engine.Detect(context.Background(), e.Path)
		require.NoError(t, err)
		require.Equal(t, e.Kind, info.Kind)
		require.Equal(t, runtime.GOOS+"_"+runtime.GOARCH, info.Platform)
		require.Equal(t, e.Path, info.Path)
		switch e.Name {
		case "tofu":
			require.Equal(t, testenv.TofuVersion, info.Version.String())
		case "terraform":
		default:
			require.Equal(t, string(e.Kind)+"-"+info.Version.String(), e.Name)
		}

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, e.Path, "version", "-json")
		cmd.Dir = t.TempDir()
		empty := filepath.Join(t.TempDir(), "empty.tfrc")
		require.NoError(t, os.WriteFile(empty, nil, 0o600))
		cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_CLI_CONFIG_FILE="+empty)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		require.NoError(t, cmd.Run())
		var doc map[string]any
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &doc), stdout.String())
		require.Equal(t, info.Version.String(), doc["terraform_version"])
		require.Equal(t, info.Platform, doc["platform"])
		require.NotContains(t, stdout.String(), "OpenTofu")
		t.Logf("%s version -json: %s", e.Kind, stdout.String())
	})
}
