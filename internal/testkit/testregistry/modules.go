package testregistry

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/hashicorp/go-version"
)

// Module registry protocol (modules.v1):
//
//	GET /v1/modules/NS/NAME/SYSTEM/versions          the versions on offer
//	GET /v1/modules/NS/NAME/SYSTEM/VERSION/download  204, X-Terraform-Get: the archive
//	GET /modarchive/NS/NAME/SYSTEM/VERSION.tar.gz    the module's files (or .zip)
//
// The download answer names the archive by a path relative to the
// server, which terraform resolves against the download URL, so it works
// under the registry's host name and under its loopback address alike.

// ArchiveFormat is how the server packs module versions for download.
type ArchiveFormat string

// Archive formats a module download can point at.
const (
	// TarGz is a gzip-compressed tar archive (the default).
	TarGz ArchiveFormat = "tar.gz"
	// Zip is a zip archive.
	Zip ArchiveFormat = "zip"
)

// module is one published module version, packed both ways.
type module struct {
	ns, name, system, version string
	tgz, zip                  []byte
}

func (m module) key() string { return ModuleKey(m.ns, m.name, m.system, m.version) }

// ModuleKey identifies a module version in ModuleDownloads:
// NS/NAME/SYSTEM/VERSION.
func ModuleKey(ns, name, system, version string) string {
	return ns + "/" + name + "/" + system + "/" + version
}

// ModuleSource is the source address a configuration gives to call a
// module of this registry: HOST/NS/NAME/SYSTEM.
func (s *Server) ModuleSource(ns, name, system string) string {
	return s.host + "/" + ns + "/" + name + "/" + system
}

// AddModule publishes a module version made of files (slash-separated
// paths relative to the module's root, and their content). A test may
// publish new versions at any time, between runs or during one; adding
// the same version again replaces its files.
func (s *Server) AddModule(ns, name, system, ver string, files map[string]string) error {
	for _, part := range []string{ns, name, system, ver} {
		if !partRE.MatchString(part) {
			return fmt.Errorf("%w %q: bad name part %q", ErrBadModule, ModuleKey(ns, name, system, ver), part)
		}
	}
	if _, err := version.NewSemver(ver); err != nil {
		return fmt.Errorf("%w %q: %w", ErrBadModule, ModuleKey(ns, name, system, ver), err)
	}
	if len(files) == 0 {
		return fmt.Errorf("%w %q: no files", ErrBadModule, ModuleKey(ns, name, system, ver))
	}
	tgz, zp, err := packModule(files)
	if err != nil {
		return fmt.Errorf("%w %q: %w", ErrBadModule, ModuleKey(ns, name, system, ver), err)
	}
	m := module{ns: ns, name: name, system: system, version: ver, tgz: tgz, zip: zp}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.modules == nil {
		s.modules = map[string]module{}
	}
	s.modules[m.key()] = m
	return nil
}

// SetModuleArchive makes later module downloads point at archives in
// format f (TarGz unless set).
func (s *Server) SetModuleArchive(f ArchiveFormat) {
	s.mu.Lock()
	s.modFormat = f
	s.mu.Unlock()
}

// ModuleDownloads returns how many GET requests the archive of the module
// version with the given ModuleKey got, in either format.
func (s *Server) ModuleDownloads(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modDownloads[key]
}

// ModuleServices returns the CLI configuration's host block that points
// terraform's service discovery for the registry's host name at the
// loopback listener: terraform then reaches the registry's module (and
// provider) API without resolving the host name. It trusts the server
// through SSL_CERT_FILE (WriteCAFile); the certificate is valid for the
// loopback address.
func (s *Server) ModuleServices() string {
	base := "https://" + s.Addr()
	return fmt.Sprintf("host %q {\n  services = {\n    \"modules.v1\"   = %q\n    \"providers.v1\" = %q\n  }\n}\n",
		s.host, base+"/v1/modules/", base+"/v1/providers/")
}

func (s *Server) moduleVersions(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	ns, name, system := r.PathValue("ns"), r.PathValue("name"), r.PathValue("system")
	s.mu.Lock()
	var vs []string
	for _, m := range s.modules {
		if m.ns == ns && m.name == name && m.system == system {
			vs = append(vs, m.version)
		}
	}
	s.mu.Unlock()
	if len(vs) == 0 {
		http.NotFound(w, r)
		return
	}
	slices.Sort(vs)
	type ver struct {
		Version string `json:"version"`
	}
	out := make([]ver, 0, len(vs))
	for _, v := range vs {
		out = append(out, ver{v})
	}
	writeJSON(w, map[string]any{"modules": []any{map[string]any{"versions": out}}})
}

func (s *Server) moduleDownload(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	ns, name, system, ver := r.PathValue("ns"), r.PathValue("name"), r.PathValue("system"), r.PathValue("version")
	s.mu.Lock()
	_, ok := s.modules[ModuleKey(ns, name, system, ver)]
	f := s.modFormat
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if f == "" {
		f = TarGz
	}
	w.Header().Set("X-Terraform-Get", "/modarchive/"+ModuleKey(ns, name, system, ver)+"."+string(f))
	w.WriteHeader(http.StatusNoContent)
}

// moduleArchive serves a module version's archive.
func (s *Server) moduleArchive(w http.ResponseWriter, r *http.Request) {
	ns, name, system, file := r.PathValue("ns"), r.PathValue("name"), r.PathValue("system"), r.PathValue("file")
	var (
		ver, ctype string
		zipped, ok bool
	)
	if ver, ok = strings.CutSuffix(file, ".tar.gz"); ok {
		ctype = "application/gzip"
	} else if ver, ok = strings.CutSuffix(file, ".zip"); ok {
		ctype, zipped = "application/zip", true
	} else {
		http.NotFound(w, r)
		return
	}
	key := ModuleKey(ns, name, system, ver)
	s.mu.Lock()
	m, ok := s.modules[key]
	if ok && r.Method == http.MethodGet {
		if s.modDownloads == nil {
			s.modDownloads = map[string]int{}
		}
		s.modDownloads[key]++
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	body := m.tgz
	if zipped {
		body = m.zip
	}
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(body)
}

// packModule packs files as a tar.gz and as a zip, in path order.
func packModule(files map[string]string) (tgz, zp []byte, err error) {
	names := make([]string, 0, len(files))
	for n := range files {
		if n == "" || strings.HasPrefix(n, "/") || slices.Contains(strings.Split(n, "/"), "..") {
			return nil, nil, fmt.Errorf("bad file name %q", n)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	var tb, zb bytes.Buffer
	gz := gzip.NewWriter(&tb)
	tw := tar.NewWriter(gz)
	zw := zip.NewWriter(&zb)
	for _, n := range names {
		body := []byte(files[n])
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			return nil, nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, nil, err
		}
		f, err := zw.Create(n)
		if err != nil {
			return nil, nil, err
		}
		if _, err := f.Write(body); err != nil {
			return nil, nil, err
		}
	}
	for _, c := range []interface{ Close() error }{tw, gz, zw} {
		if err := c.Close(); err != nil {
			return nil, nil, err
		}
	}
	return tb.Bytes(), zb.Bytes(), nil
}
