package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// missingCLIConfigFile returns the missing file TF_CLI_CONFIG_FILE names
// on this machine (CI images set one), or a path that does not exist.
func missingCLIConfigFile(t *testing.T) string {
	p := os.Getenv("TF_CLI_CONFIG_FILE")
	if _, err := os.Stat(p); p == "" || err == nil {
		p = filepath.Join(t.TempDir(), "no-such.tfrc")
	}
	return p
}

// TestMissingCLIConfigIsOneWarning: a TF_CLI_CONFIG_FILE naming a missing
// file, which terraform would warn about, is one warning per Run, with
// or without a plugin cache: once in the output stream, once in the
// logger and once in the report (and its JSON); every unit succeeds
// (issue 17 item 6).
func TestMissingCLIConfigIsOneWarning(t *testing.T) {
	missing := missingCLIConfigFile(t)
	t.Setenv("TF_CLI_CONFIG_FILE", missing)
	w := newWorld(t)
	src := w.component(t, "item", itemComponent)
	plain := w.component(t, "plain", plainComponent)
	for _, cached := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cached), func(t *testing.T) {
			out := &syncBuffer{}
			var logs bytes.Buffer
			opts := []Option{WithWorkdirs(w.wd), WithTerraform(w.tf), WithOutput(out),
				WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))}
			var units []Unit
			if cached {
				opts = append(opts, WithPluginCache(w.cache))
				for i := range 3 {
					inst := fmt.Sprintf("cached-%d", i)
					units = append(units, Unit{Workdir: workdirSpec("s", inst, src, files(t, map[string]any{"name": inst}, filepath.Join(t.TempDir(), inst+".tfstate")))})
				}
			} else {
				for i := range 3 {
					units = append(units, Unit{Workdir: workdirSpec("s", fmt.Sprintf("plain-%d", i), plain, nil)})
				}
			}
			r, err := New(opts...)
			require.NoError(t, err)
			rep, err := r.Run(testCtx(t), Apply, units...)
			require.NoError(t, err)
			require.Equal(t, 3, rep.Count(Succeeded))
			require.Equal(t, 1, strings.Count(out.String(), "your CLI config: TF_CLI_CONFIG_FILE names "+missing+", which does not exist"), out.String())
			require.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), logs.String())
			require.Contains(t, logs.String(), missing)
			require.Len(t, rep.Warnings, 1)
			require.Contains(t, rep.Warnings[0], missing)
			b, err := json.Marshal(rep)
			require.NoError(t, err)
			var back Report
			require.NoError(t, json.Unmarshal(b, &back))
			require.Equal(t, rep.Warnings, back.Warnings)
		})
	}
}
