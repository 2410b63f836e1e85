package pluginc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/hashicorp/go-version"
)

// Source is a place providers are installed from: Registry, NetworkMirror
// or FilesystemMirror. Sources are tried in the order given to WithSource,
// like the methods of Terraform's provider_installation block: a version is
// installed from the first source that lists it.
type Source interface {
	// String describes the source in errors and logs.
	String() string

	// versions lists the versions of p the source offers.
	versions(ctx context.Context, env *fetchEnv, p Provider) ([]*version.Version, error)

	// fetch writes the package zip of p at v for platform into dst and
	// verifies it. It returns the hashes the package contributes to a lock
	// file besides its own h1: (the zh: hashes of a signed SHA256SUMS) and
	// hashes that the unpacked package's h1: must match, if any.
	fetch(ctx context.Context, env *fetchEnv, p Provider, v *version.Version, platform string, dst *os.File) (fetched, error)
}

// fetched is what a source learned while fetching a package.
type fetched struct {
	url       string   // where the zip came from
	lockExtra []string // extra lock file hashes (zh: of every platform)
	wantH1    []string // h1: hashes the package must match (mirrors)
	bytes     int64    // bytes transferred
	sha256    string   // hex SHA-256 of the zip
}

// fetchEnv is what sources need from the Cache.
type fetchEnv struct {
	client *http.Client
	log    *slog.Logger
	env    func(string) (string, bool)
}

// get performs a GET and returns the response if it is 200 OK. Other
// statuses become errors wrapping ErrDownload that name the URL.
func (e *fetchEnv) get(ctx context.Context, url, token string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", ErrDownload, url, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("User-Agent", "tfisolate-pluginc")
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: GET %s: %v", ErrDownload, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		msg := strings.TrimSpace(string(b))
		if msg != "" {
			msg = ": " + oneLine(msg)
		}
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%w: GET %s: %s%s", ErrNotFound, url, resp.Status, msg)
		}
		return nil, fmt.Errorf("%w: GET %s: %s%s", ErrDownload, url, resp.Status, msg)
	}
	return resp, nil
}

// getSmall fetches a small document (JSON, SHA256SUMS, signatures).
func (e *fetchEnv) getSmall(ctx context.Context, url, token string) ([]byte, error) {
	resp, err := e.get(ctx, url, token)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: GET %s: read body: %v", ErrDownload, url, err)
	}
	return b, nil
}

// download streams url into dst and returns the byte count and the zip's
// SHA-256 in hex. A body shorter than its Content-Length is an error.
func (e *fetchEnv) download(ctx context.Context, url, token string, dst *os.File) (int64, string, error) {
	resp, err := e.get(ctx, url, token)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	return copyHashed(ctx, url, dst, resp.Body, resp.ContentLength)
}

func copyHashed(ctx context.Context, url string, dst *os.File, src io.Reader, want int64) (int64, string, error) {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(dst, h), src)
	if err != nil {
		if ctx.Err() != nil {
			return n, "", ctx.Err()
		}
		return n, "", fmt.Errorf("%w: %s: body truncated after %d bytes: %v", ErrDownload, url, n, err)
	}
	if want >= 0 && n != want {
		return n, "", fmt.Errorf("%w: %s: body truncated: got %d of %d bytes", ErrDownload, url, n, want)
	}
	return n, hexSum(h), nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }
