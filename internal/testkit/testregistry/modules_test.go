package testregistry

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModuleRegistryProtocol: discovery names modules.v1; versions lists
// what was published, a version published later included; download
// answers 204 with X-Terraform-Get naming an archive the server serves in
// the chosen format, holding the module's files; archive GETs are
// counted.
func TestModuleRegistryProtocol(t *testing.T) {
	s := Start(t)
	c := s.HTTPClient()
	code, b := get(t, c, s.URL()+"/.well-known/terraform.json")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"providers.v1":"/v1/providers/","modules.v1":"/v1/modules/"}`, string(b))

	code, _ = get(t, c, s.URL()+"/v1/modules/ns/greet/tfitest/versions")
	require.Equal(t, http.StatusNotFound, code)

	require.NoError(t, s.AddModule("ns", "greet", "tfitest", "1.0.0", map[string]string{"main.tf": "# 1.0.0\n", "sub/x.tf": "# x\n"}))
	code, b = get(t, c, s.URL()+"/v1/modules/ns/greet/tfitest/versions")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"modules":[{"versions":[{"version":"1.0.0"}]}]}`, string(b))
	require.NoError(t, s.AddModule("ns", "greet", "tfitest", "1.1.0", map[string]string{"main.tf": "# 1.1.0\n"}))
	code, b = get(t, c, s.URL()+"/v1/modules/ns/greet/tfitest/versions")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"modules":[{"versions":[{"version":"1.0.0"},{"version":"1.1.0"}]}]}`, string(b))

	resp, err := c.Get(s.URL() + "/v1/modules/ns/greet/tfitest/1.0.0/download")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	loc := resp.Header.Get("X-Terraform-Get")
	require.Equal(t, "/modarchive/ns/greet/tfitest/1.0.0.tar.gz", loc)
	code, b = get(t, c, s.URL()+loc)
	require.Equal(t, 200, code)
	require.Equal(t, map[string]string{"main.tf": "# 1.0.0\n", "sub/x.tf": "# x\n"}, untar(t, b))

	s.SetModuleArchive(Zip)
	resp, err = c.Get(s.URL() + "/v1/modules/ns/greet/tfitest/1.1.0/download")
	require.NoError(t, err)
	resp.Body.Close()
	loc = resp.Header.Get("X-Terraform-Get")
	require.Equal(t, "/modarchive/ns/greet/tfitest/1.1.0.zip", loc)
	code, b = get(t, c, s.URL()+loc)
	require.Equal(t, 200, code)
	require.Equal(t, map[string]string{"main.tf": "# 1.1.0\n"}, unzip(t, b))

	require.Equal(t, 1, s.ModuleDownloads(ModuleKey("ns", "greet", "tfitest", "1.0.0")))
	require.Equal(t, 1, s.ModuleDownloads(ModuleKey("ns", "greet", "tfitest", "1.1.0")))
	code, _ = get(t, c, s.URL()+"/v1/modules/ns/greet/tfitest/2.0.0/download")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, DefaultHost+"/ns/greet/tfitest", s.ModuleSource("ns", "greet", "tfitest"))

	for _, bad := range []struct{ ver string }{{"latest"}, {"../1"}} {
		require.ErrorIs(t, s.AddModule("ns", "greet", "tfitest", bad.ver, map[string]string{"main.tf": ""}), ErrBadModule)
	}
	require.ErrorIs(t, s.AddModule("ns", "greet", "tfitest", "3.0.0", nil), ErrBadModule)
	require.ErrorIs(t, s.AddModule("ns", "greet", "tfitest", "3.0.0", map[string]string{"../x.tf": ""}), ErrBadModule)
}

func untar(t *testing.T, b []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[h.Name] = string(body)
	}
}

func unzip(t *testing.T, b []byte) map[string]string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range zr.File {
		r, err := f.Open()
		require.NoError(t, err)
		body, err := io.ReadAll(r)
		require.NoError(t, err)
		r.Close()
		out[f.Name] = string(body)
	}
	return out
}
