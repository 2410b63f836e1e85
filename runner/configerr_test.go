package runner

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigErrorsAreTerraforms: a configuration terraform rejects fails
// with terraform's own diagnostic (naming the file and line, or the
// module), with the plugin cache as without it, never with the SDK's
// message naming the workdir copy.
func TestConfigErrorsAreTerraforms(t *testing.T) {
	w := newWorld(t)
	withCache := w.runner(t)
	withoutCache, err := New(WithWorkdirs(w.wd), WithTerraform(w.tf))
	require.NoError(t, err)
	for name, tc := range map[string]struct{ main, want string }{
		"syntax":        {"resource \"terraform_data\" \"a\" {\n  input = \n}\n", "main.tf line"},
		"missing":       {`module "m" { source = "./nowhere" }`, "nowhere"},
		"local version": {"module \"m\" {\n  source  = \"./m\"\n  version = \"1.0.0\"\n}\n", "version"},
	} {
		t.Run(name, func(t *testing.T) {
			src := w.component(t, "bad-"+filepath.Base(t.Name()), tc.main)
			for i, r := range []*Runner{withCache, withoutCache} {
				_, err := r.Run(testCtx(t), Plan, Unit{Workdir: workdirSpec("plat-ue2-dev", filepath.Base(t.Name())+[]string{"-cache", "-plain"}[i], src, nil)})
				require.Error(t, err)
				require.ErrorContains(t, err, tc.want)
				require.NotContains(t, err.Error(), "discover providers")
				require.NotContains(t, err.Error(), ".tfisolate", "names no workdir copy")
			}
		})
	}
}
