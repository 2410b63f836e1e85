package testbackend

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

func TestPostgresBackendJSON(t *testing.T) {
	p := &Postgres{connStr: "postgres://postgres@127.0.0.1:5432/tfstate?sslmode=disable"}
	var doc struct {
		Terraform struct {
			Backend struct {
				PG struct {
					ConnStr    string `json:"conn_str"`
					SchemaName string `json:"schema_name"`
				} `json:"pg"`
			} `json:"backend"`
		} `json:"terraform"`
	}
	require.NoError(t, json.Unmarshal(p.BackendJSON("stack_a__vpc_1"), &doc))
	require.Equal(t, p.connStr, doc.Terraform.Backend.PG.ConnStr)
	require.Equal(t, "stack_a__vpc_1", doc.Terraform.Backend.PG.SchemaName)

	require.NotPanics(t, func() { p.BackendJSON(strings.Repeat("x", 63)) }, "63 bytes is PostgreSQL's limit")
	for _, bad := range []string{"", "Upper", "1digit", "has-dash", "has space", `quo"te`, "a.b",
		strings.Repeat("x", 64)} {
		t.Run(bad, func(t *testing.T) {
			require.PanicsWithValue(t, "testbackend: schema name "+strconv.Quote(bad)+" is not a plain lower-case identifier",
				func() { p.BackendJSON(bad) })
		})
	}
}

func TestAttachPostgresRefusesNonLoopback(t *testing.T) {
	for _, cs := range []string{
		"not a url\x7f",
		"mysql://u@127.0.0.1:1/db",
		"postgres://u@10.0.0.1:5432/db",
		"postgres://u@localhost:5432/db",
		"postgres://u@127.0.0.1/db",
	} {
		t.Run(cs, func(t *testing.T) {
			_, err := attachPostgres(cs)
			require.ErrorContains(t, err, PostgresEnvVar)
		})
	}
}

// fakeTB records how StartPostgres ended the test; its Skipf and Fatalf
// end the goroutine like the real ones.
type fakeTB struct {
	testing.TB
	skipped, fatal string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestStartPostgresWithoutServer(t *testing.T) {
	saved := pgInstallGlob
	pgInstallGlob = filepath.Join(t.TempDir(), "none", "*", "bin")
	t.Cleanup(func() { pgInstallGlob = saved })
	t.Setenv("PATH", t.TempDir())
	t.Setenv(PostgresEnvVar, "")

	for _, tc := range []struct {
		ci                  string
		wantSkip, wantFatal string
	}{
		{ci: "", wantSkip: "apt-get install postgresql"},
		{ci: "true", wantFatal: "PostgreSQL is required under CI=true"},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			f := &fakeTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				StartPostgres(f)
				f.fatal = "StartPostgres returned"
			}()
			<-done
			if tc.wantSkip != "" {
				require.Contains(t, f.skipped, tc.wantSkip)
				require.Contains(t, f.skipped, ErrNoPostgres.Error())
				require.Empty(t, f.fatal)
			} else {
				require.Contains(t, f.fatal, tc.wantFatal)
				require.Empty(t, f.skipped)
			}
		})
	}
}

func TestAttachPostgresUnreachable(t *testing.T) {
	port, err := freePort() // free: nothing listens there
	require.NoError(t, err)
	_, err = attachPostgres(fmt.Sprintf("postgres://postgres@127.0.0.1:%d/tfstate?sslmode=disable", port))
	require.ErrorContains(t, err, "server not reachable")
	require.ErrorContains(t, err, PostgresEnvVar)
}
