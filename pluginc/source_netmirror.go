package pluginc

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"
)

// NetworkMirror returns a Source speaking the provider network mirror
// protocol at baseURL (https://HOST/PATH/): HOSTNAME/NS/TYPE/index.json and
// HOSTNAME/NS/TYPE/VERSION.json. Packages are checked against the h1: or
// zh: hashes the mirror gives; like Terraform, only the package's own h1:
// goes into the lock file, since a mirror's hashes are not signed. The
// mirror's host (port included, as Terraform keys it) gets its
// TF_TOKEN_<host> or CLI config credentials, sent only to the mirror's
// own scheme, host and port: an archive URL on plain http or on another
// host or port is fetched without them, and a redirect from https to
// http is refused.
func NetworkMirror(baseURL string) Source { return netMirror{base: baseURL} }

type netMirror struct{ base string }

// String names the mirror URL, without credentials, query or fragment:
// it goes into errors, logs and Fallback records.
func (m netMirror) String() string { return "network mirror " + scrubURL(m.base) }

func (m netMirror) url(p Provider, file string) (*url.URL, error) {
	b, err := url.Parse(m.base)
	if err != nil || b.Scheme != "https" || b.Host == "" {
		return nil, fmt.Errorf("%w: network mirror URL %q must be an absolute https URL", ErrDownload, m.base)
	}
	return b.JoinPath(p.Hostname, p.Namespace, p.Type, file), nil
}

// Versions lists the versions in the mirror's index.json for p.
func (m netMirror) Versions(ctx context.Context, p Provider) ([]string, error) {
	env := envFrom(ctx)
	u, err := m.url(p, "index.json")
	if err != nil {
		return nil, err
	}
	body, err := env.getSmall(ctx, u.String(), tokenFor(env, u.Host, u))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Versions map[string]json.RawMessage `json:"versions"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDownload, u, err)
	}
	return slices.Sorted(maps.Keys(doc.Versions)), nil
}

// Fetch downloads the package and checks it against the mirror's hashes.
func (m netMirror) Fetch(ctx context.Context, id PackageID, dst *os.File) (Fetched, error) {
	env, platform := envFrom(ctx), id.Platform
	u, err := m.url(id.Provider, id.Version+".json")
	if err != nil {
		return Fetched{}, err
	}
	// A mirror in front of a cache may fetch the package upstream before
	// it answers: not under the metadata timeout (getFilledDocument).
	body, err := env.getFilledDocument(ctx, u.String(), tokenFor(env, u.Host, u))
	if err != nil {
		return Fetched{URL: u.String()}, err
	}
	var doc struct {
		Archives map[string]struct {
			URL    string   `json:"url"`
			Hashes []string `json:"hashes"`
		} `json:"archives"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Fetched{URL: u.String()}, fmt.Errorf("%w: %s: %v", ErrDownload, u, err)
	}
	a, ok := doc.Archives[platform]
	if !ok {
		return Fetched{URL: u.String()}, fmt.Errorf("%w: %s has no archive for %s", ErrNotFound, u, platform)
	}
	dl, err := u.Parse(a.URL)
	if err != nil || a.URL == "" {
		return Fetched{URL: u.String()}, fmt.Errorf("%w: %s: bad archive url %q", ErrDownload, u, a.URL)
	}
	n, sum, err := env.download(ctx, dl.String(), tokenFor(env, u.Host, dl), dst)
	if err != nil {
		return Fetched{URL: dl.String(), Bytes: n}, err
	}
	f := Fetched{URL: dl.String(), Bytes: n, SHA256: sum}
	if len(a.Hashes) == 0 {
		return f, nil
	}
	var h1s []string
	for _, h := range a.Hashes {
		if zh, ok := strings.CutPrefix(h, "zh:"); ok && strings.EqualFold(zh, sum) {
			return f, nil
		}
		if strings.HasPrefix(h, "h1:") {
			h1s = append(h1s, h)
		}
	}
	if len(h1s) > 0 {
		zh, err := dirhash.HashZip(dst.Name(), dirhash.Hash1)
		if err == nil && slices.Contains(h1s, zh) {
			return f, nil
		}
	}
	return f, fmt.Errorf("%w: archive (zh:%s) matches none of the mirror's hashes %s", ErrChecksum, sum, strings.Join(a.Hashes, ", "))
}
