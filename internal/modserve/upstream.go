package modserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
)

// upstream fetches module packages from their own registries: service
// discovery ("modules.v1" at https://HOST/.well-known/terraform.json),
// the version list, the download answer, and the archive it points at.
type upstream struct {
	client  *http.Client
	token   func(host string) string
	maxSize int64

	mu    sync.Mutex
	bases map[string]*url.URL // modules.v1 base per host, once discovered
}

// base returns the modules.v1 base URL of host.
func (u *upstream) base(ctx context.Context, host string) (*url.URL, error) {
	u.mu.Lock()
	b, ok := u.bases[host]
	u.mu.Unlock()
	if ok {
		return b, nil
	}
	disco := &url.URL{Scheme: "https", Host: host, Path: "/.well-known/terraform.json"}
	body, _, err := u.get(ctx, disco, host, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("service discovery for %s: %w", host, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: service discovery %s: %v", ErrUpstream, disco, err)
	}
	raw, _ := doc["modules.v1"].(string)
	if raw == "" {
		return nil, fmt.Errorf("%w: %s offers no module registry (no modules.v1 in %s)", ErrNotFound, host, disco)
	}
	b, err = disco.Parse(raw)
	if err != nil || b.Scheme != "https" {
		return nil, fmt.Errorf("%w: service discovery %s: modules.v1 %q is not an https URL", ErrUpstream, disco, raw)
	}
	if !strings.HasSuffix(b.Path, "/") {
		b.Path += "/"
	}
	u.mu.Lock()
	if u.bases == nil {
		u.bases = map[string]*url.URL{}
	}
	u.bases[host] = b
	u.mu.Unlock()
	return b, nil
}

// versions lists the module's versions as its registry does.
func (u *upstream) versions(ctx context.Context, m Module) ([]string, error) {
	b, err := u.base(ctx, m.Host)
	if err != nil {
		return nil, err
	}
	where := b.JoinPath(m.Namespace, m.Name, m.System, "versions")
	body, _, err := u.get(ctx, where, m.Host, 16<<20)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Modules []struct {
			Versions []struct {
				Version string `json:"version"`
			} `json:"versions"`
		} `json:"modules"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUpstream, where, err)
	}
	var vs []string
	for _, mod := range doc.Modules {
		for _, v := range mod.Versions {
			vs = append(vs, v.Version)
		}
	}
	return vs, nil
}

// fetch writes the module package into dir: the download answer's
// location (an https or http archive, tar.gz or zip; a location of any
// other kind, git for one, or with a subdirectory is not fetched yet),
// unpacked.
func (u *upstream) fetch(ctx context.Context, m Module, dir string) error {
	b, err := u.base(ctx, m.Host)
	if err != nil {
		return err
	}
	where := b.JoinPath(m.Namespace, m.Name, m.System, m.Version, "download")
	body, h, err := u.get(ctx, where, m.Host, 1<<20)
	if err != nil {
		return err
	}
	loc := h.Get("X-Terraform-Get")
	if loc == "" { // the protocol's JSON form
		var doc struct {
			Location string `json:"location"`
		}
		_ = json.Unmarshal(body, &doc)
		loc = doc.Location
	}
	if loc == "" {
		return fmt.Errorf("%w: %s names no download location", ErrUpstream, where)
	}
	archive, format, err := archiveURL(where, loc)
	if err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	// Credentials go only to the registry's own host, as terraform sends
	// them.
	r, err := u.open(ctx, archive, m.Host)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := unpack(r, format, dir, u.maxSize); err != nil {
		return fmt.Errorf("%s from %s: %w", m, redactURL(archive), err)
	}
	return nil
}

// archiveURL resolves a download location against the download URL and
// says how the archive is packed, refusing what is not fetched here.
func archiveURL(base *url.URL, loc string) (*url.URL, string, error) {
	if forced, _, ok := strings.Cut(loc, "::"); ok && !strings.Contains(forced, "/") {
		return nil, "", fmt.Errorf("%w: the download location is a %s source, which the module server does not fetch yet", ErrUpstream, forced)
	}
	a, err := base.Parse(loc)
	if err != nil {
		return nil, "", fmt.Errorf("%w: download location: %v", ErrUpstream, err)
	}
	if a.Scheme != "https" && a.Scheme != "http" {
		return nil, "", fmt.Errorf("%w: the download location is a %s URL, which the module server does not fetch yet", ErrUpstream, a.Scheme)
	}
	if strings.Contains(a.Path, "//") {
		return nil, "", fmt.Errorf("%w: the download location names a subdirectory, which the module server does not fetch yet", ErrUpstream)
	}
	q := a.Query()
	format := q.Get("archive")
	q.Del("archive")
	a.RawQuery = q.Encode()
	if format == "" {
		switch p := path.Base(a.Path); {
		case strings.HasSuffix(p, ".tar.gz"), strings.HasSuffix(p, ".tgz"):
			format = "tar.gz"
		case strings.HasSuffix(p, ".zip"):
			format = "zip"
		default:
			return nil, "", fmt.Errorf("%w: the download location %s is not a tar.gz or zip archive", ErrUpstream, redactURL(a))
		}
	}
	return a, format, nil
}

// get fetches a small document (at most max bytes).
func (u *upstream) get(ctx context.Context, where *url.URL, host string, max int64) ([]byte, http.Header, error) {
	r, err := u.do(ctx, where, host)
	if err != nil {
		return nil, nil, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrUpstream, redactURL(where), err)
	}
	if int64(len(b)) > max {
		return nil, nil, fmt.Errorf("%w: %s: the answer is larger than %d bytes", ErrUpstream, redactURL(where), max)
	}
	return b, r.Header, nil
}

// open starts a download; the caller closes the body.
func (u *upstream) open(ctx context.Context, where *url.URL, host string) (io.ReadCloser, error) {
	r, err := u.do(ctx, where, host)
	if err != nil {
		return nil, err
	}
	return r.Body, nil
}

// do sends a GET, with the host's token when the URL is on that host
// over https, and maps a failing status to this package's errors.
func (u *upstream) do(ctx context.Context, where *url.URL, host string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	if tok := u.token(host); tok != "" && where.Scheme == "https" && strings.EqualFold(where.Host, host) {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	r, err := u.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redactURL(where)
		}
		return nil, fmt.Errorf("%w: %v", ErrUpstream, err)
	}
	switch {
	case r.StatusCode == http.StatusNotFound:
		r.Body.Close()
		return nil, fmt.Errorf("%w: %s answered 404", ErrNotFound, redactURL(where))
	case r.StatusCode >= 300:
		r.Body.Close()
		return nil, fmt.Errorf("%w: %s answered %s", ErrUpstream, redactURL(where), r.Status)
	}
	return r, nil
}

// redactURL is a URL as errors, logs and fallbacks may show it: without
// credentials, query or fragment (a download location may carry a
// signature in its query).
func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}
