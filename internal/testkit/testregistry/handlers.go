package testregistry

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/terraform.json", s.discovery)
	mux.HandleFunc("GET /v1/providers/{ns}/{type}/versions", s.versions)
	mux.HandleFunc("GET /v1/providers/{ns}/{type}/{version}/download/{os}/{arch}", s.downloadDoc)
	mux.HandleFunc("GET /dl/{ns}/{type}/{version}/{file}", s.file)
	mux.HandleFunc("GET /{host}/{ns}/{type}/{file}", s.mirror)
	mux.HandleFunc("GET /v1/modules/{ns}/{name}/{system}/versions", s.moduleVersions)
	mux.HandleFunc("GET /v1/modules/{ns}/{name}/{system}/{version}/download", s.moduleDownload)
	mux.HandleFunc("GET /modarchive/{ns}/{name}/{system}/{file}", s.moduleArchive)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.recordAuth(r)
		s.log.Debug("request", "method", r.Method, "path", r.URL.Path)
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]string{"providers.v1": "/v1/providers/", "modules.v1": "/v1/modules/"})
}

func (s *Server) versions(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	type platform struct {
		OS   string `json:"os"`
		Arch string `json:"arch"`
	}
	type ver struct {
		Version   string     `json:"version"`
		Protocols []string   `json:"protocols"`
		Platforms []platform `json:"platforms"`
	}
	var out []*ver
	byVersion := map[string]*ver{}
	for _, p := range s.providerPackages(r.PathValue("ns"), r.PathValue("type")) {
		v := byVersion[p.Version]
		if v == nil {
			v = &ver{Version: p.Version, Protocols: []string{"5.0", "6.0"}}
			byVersion[p.Version] = v
			out = append(out, v)
		}
		osName, arch, _ := strings.Cut(p.Platform, "_")
		v.Platforms = append(v.Platforms, platform{osName, arch})
	}
	if len(out) == 0 {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, map[string]any{"versions": out})
}

func (s *Server) downloadDoc(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	ns, typ, ver := r.PathValue("ns"), r.PathValue("type"), r.PathValue("version")
	osName, arch := r.PathValue("os"), r.PathValue("arch")
	p, ok := s.pkg(ns, typ, ver, osName+"_"+arch)
	if !ok {
		http.NotFound(w, r)
		return
	}
	f, _ := s.state()
	base := "/dl/" + ns + "/" + typ + "/" + ver + "/"
	doc := map[string]any{
		"protocols":             []string{"5.0", "6.0"},
		"os":                    osName,
		"arch":                  arch,
		"filename":              p.Filename(),
		"download_url":          s.archiveURL(base + p.Filename()),
		"shasums_url":           s.archiveURL(base + "SHA256SUMS"),
		"shasums_signature_url": s.archiveURL(base + "SHA256SUMS.sig"),
		"shasum":                s.sha(p, f),
		"signing_keys": map[string]any{
			"gpg_public_keys": []map[string]string{{
				"key_id":      s.keys.keyID,
				"ascii_armor": s.keys.armored,
			}},
		},
	}
	if f != FaultOversize {
		writeJSON(w, doc)
		return
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(doc)
	buf.Write(bytes.Repeat([]byte(" "), max(OversizeBytes-buf.Len(), 0)))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

// file serves SHA256SUMS, its signature and package zips.
func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	if s.redirect(w, r) {
		return
	}
	ns, typ, ver, name := r.PathValue("ns"), r.PathValue("type"), r.PathValue("version"), r.PathValue("file")
	f, _ := s.state()
	switch name {
	case "SHA256SUMS", "SHA256SUMS.sig":
		doc, sig, err := s.sums(ns, typ, ver, f)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if len(doc) == 0 {
			http.NotFound(w, r)
			return
		}
		if name == "SHA256SUMS" {
			_, _ = w.Write(doc)
		} else {
			_, _ = w.Write(sig)
		}
		return
	}
	prefix := "terraform-provider-" + typ + "_" + ver + "_"
	plat, ok := strings.CutSuffix(strings.TrimPrefix(name, prefix), ".zip")
	if !ok || !strings.HasPrefix(name, prefix) {
		http.NotFound(w, r)
		return
	}
	p, ok := s.pkg(ns, typ, ver, plat)
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.serveZip(w, r, p)
}

// mirror serves the network mirror protocol's index.json and VERSION.json.
func (s *Server) mirror(w http.ResponseWriter, r *http.Request) {
	if !s.mirrors(r.PathValue("host")) {
		http.NotFound(w, r)
		return
	}
	ns, typ, file := r.PathValue("ns"), r.PathValue("type"), r.PathValue("file")
	pkgs := s.providerPackages(ns, typ)
	if file == "index.json" {
		vs := map[string]struct{}{}
		for _, p := range pkgs {
			vs[p.Version] = struct{}{}
		}
		if len(vs) == 0 {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, map[string]any{"versions": vs})
		return
	}
	ver, ok := strings.CutSuffix(file, ".json")
	if !ok {
		http.NotFound(w, r)
		return
	}
	f, _ := s.state()
	type archive struct {
		URL    string   `json:"url"`
		Hashes []string `json:"hashes"`
	}
	archives := map[string]archive{}
	for _, p := range pkgs {
		if p.Version != ver {
			continue
		}
		hashes := []string{"zh:" + s.sha(p, f)}
		if f != FaultWrongChecksum {
			if h := s.hashesOf(p); h.h1Err == nil {
				hashes = append([]string{h.h1}, hashes...)
			}
		}
		archives[p.Platform] = archive{URL: s.archiveURL("/dl/" + ns + "/" + typ + "/" + ver + "/" + p.Filename()), Hashes: hashes}
	}
	if len(archives) == 0 {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, map[string]any{"archives": archives})
}

// hashZip computes the h1: hash of a zip held in memory.
func hashZip(b []byte) (string, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return "", err
	}
	files := make([]string, 0, len(zr.File))
	byName := map[string]*zip.File{}
	for _, f := range zr.File {
		files = append(files, f.Name)
		byName[f.Name] = f
	}
	return dirhash.Hash1(files, func(name string) (io.ReadCloser, error) { return byName[name].Open() })
}
