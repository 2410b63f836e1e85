package modserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

// Client fetches module trees from a module server (Handler) for a
// machine's own module store.
type Client struct {
	base *url.URL
	cfg  config
}

// NewClient returns a client of the server at rawURL, an https URL
// without credentials, query or fragment (the token goes in WithToken,
// so the URL can be named in every message as it is).
func NewClient(rawURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("modserve: server URL: %w: %v", ErrBadOption, err)
	}
	switch {
	case u.Scheme != "https":
		return nil, fmt.Errorf("modserve: server URL %q: %w: only https is spoken", rawURL, ErrBadOption)
	case u.Host == "":
		return nil, fmt.Errorf("modserve: server URL %q: %w: no host", rawURL, ErrBadOption)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("modserve: server URL %s: %w: credentials, query or fragment in it (give a token with WithToken)", redactURL(u), ErrBadOption)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Client{base: u, cfg: cfg}, nil
}

// URL is the server's URL, as given.
func (c *Client) URL() string { return c.base.String() }

// HostBlock is the CLI config host block that sends plain terraform's
// (or tofu's) module registry requests for host to the server (its
// provider registry requests to providers, the host's own providers.v1
// URL, when not empty: a host block replaces service discovery for the
// host whole).
func (c *Client) HostBlock(host, providers string) string {
	b := fmt.Sprintf("host %q {\n  services = {\n    \"modules.v1\" = %q\n", host, c.base.JoinPath("modules.v1", host).String()+"/")
	if providers != "" {
		b += fmt.Sprintf("    \"providers.v1\" = %q\n", providers)
	}
	return b + "  }\n}\n"
}

// Fetch writes m's tree from the server into dir, which must exist and
// be empty, and checks it: the answer must name this FormatVersion and a
// digest, and the unpacked tree must have that digest (treesum). On any
// failure dir is emptied again, so the caller can fill it another way;
// a tree that does not match is ErrDigest, any other failure of the
// server ErrServer.
func (c *Client) Fetch(ctx context.Context, m Module, dir string) error {
	if err := m.validate(); err != nil {
		return err
	}
	timeout := c.cfg.fillTimeout
	if !c.cfg.timeoutSet {
		timeout = DefaultClientTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := c.fetch(ctx, m, dir)
	if err != nil {
		if cerr := clear(dir); cerr != nil {
			return fmt.Errorf("%w; and emptying %s failed: %v", err, dir, cerr)
		}
	}
	return err
}

func (c *Client) fetch(ctx context.Context, m Module, dir string) error {
	where := c.base.JoinPath("v1", "tree", m.path()+".tar.gz")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where.String(), nil)
	if err != nil {
		return fmt.Errorf("modserve: %w %s: %v", ErrServer, c.base, err)
	}
	if c.cfg.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.token)
	}
	resp, err := c.cfg.client.Do(req)
	if err != nil {
		return fmt.Errorf("modserve: %w %s: %s: %v", ErrServer, c.base, m, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("modserve: %w %s: %s: %s: %s", ErrServer, c.base, m, resp.Status, strings.TrimSpace(string(msg)))
	}
	if f := resp.Header.Get(FormatHeader); f != FormatVersion {
		return fmt.Errorf("modserve: %w %s: %s: the answer has format %q, this client reads %q (a server of another release)", ErrServer, c.base, m, f, FormatVersion)
	}
	want := resp.Header.Get(DigestHeader)
	if !strings.HasPrefix(want, treesum.DigestPrefix) {
		return fmt.Errorf("modserve: %w %s: %s: the answer names no tree digest", ErrServer, c.base, m)
	}
	if err := unpack(resp.Body, "tar.gz", dir, c.cfg.maxSize); err != nil {
		if errors.Is(err, ErrBadArchive) {
			return fmt.Errorf("modserve: %w %s: %s: %w", ErrServer, c.base, m, err)
		}
		return fmt.Errorf("modserve: %w %s: %s: %v", ErrServer, c.base, m, err)
	}
	rec, err := treesum.Record(dir)
	if err != nil {
		return fmt.Errorf("modserve: %s from %s: %w", m, c.base, err)
	}
	if got := rec.Digest(); got != want {
		return fmt.Errorf("modserve: %s from %s: %w: the server named %s, the tree it sent is %s", m, c.base, ErrDigest, want, got)
	}
	return nil
}

// clear removes everything in dir, keeping dir.
func clear(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		// A read-only dir an archive made must be writable to empty it.
		_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(q, 0o700)
			}
			return nil
		})
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// Fallback says that a module tree came from somewhere other than the
// module server, because the server failed: down, answering an error, or
// sending a tree that did not match its digest.
type Fallback struct {
	// Module is the module package, its source address and version.
	Module string
	// Server is the server's URL (never with credentials: NewClient
	// refuses a URL that has them).
	Server string
	// Err is what failed. The only URLs in it are the server's (which
	// has no credentials or query) and upstream URLs, which this package
	// always names without their query or credentials.
	Err string
	// Used says where the tree came from instead.
	Used string
}

// String says which server failed, how, and where the tree came from.
func (f Fallback) String() string {
	return fmt.Sprintf("module server %s failed to deliver %s (%s); it was fetched from %s instead", f.Server, f.Module, f.Err, f.Used)
}

// Fill is the fill function for a machine's own module store: it writes
// m's tree into dir from the server, and when the server fails, from
// upstream (a function writing the tree from the module's own source,
// named by used), calling fellBack (when not nil) and logging a Warn
// record that say so. With no upstream (nil) a failing server is the
// fill's error.
func (c *Client) Fill(m Module, used string, upstream func(ctx context.Context, dir string) error, fellBack func(Fallback)) func(ctx context.Context, dir string) error {
	return func(ctx context.Context, dir string) error {
		err := c.Fetch(ctx, m, dir)
		if err == nil || upstream == nil || ctx.Err() != nil {
			return err
		}
		if uerr := upstream(ctx, dir); uerr != nil {
			return fmt.Errorf("%w; and from upstream: %w", err, uerr)
		}
		fb := Fallback{Module: m.String(), Server: c.URL(), Err: err.Error(), Used: used}
		c.cfg.log.Warn("module server failed; fetched from upstream", "module", fb.Module, "server", fb.Server, "error", fb.Err, "used", used)
		if fellBack != nil {
			fellBack(fb)
		}
		return nil
	}
}

// Upstream returns a function that fetches m from its own registry into
// dir, as the server does on a miss: what a machine falls back to. Of
// the options, WithHTTPClient, WithUpstreamToken and WithMaxSize apply.
func Upstream(m Module, opts ...Option) (func(ctx context.Context, dir string) error, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	up := &upstream{client: cfg.client, maxSize: cfg.maxSize, token: func(host string) string { return cfg.upTokens[host] }}
	return func(ctx context.Context, dir string) error { return up.fetch(ctx, m, dir) }, nil
}
