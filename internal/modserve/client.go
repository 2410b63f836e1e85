package modserve

import (
	"fmt"
	"net/url"
	"strings"
)

// Client is a machine's view of a module server (Handler): its URL,
// checked, and the git configuration that sends the machine's git to it
// (GitConfig). Registry modules reach the server through terraform's own
// download, which checks each archive against the download answer's
// checksum; the runner writes their CLI config host blocks itself.
type Client struct {
	base *url.URL
}

// NewClient returns a client of the server at rawURL, an https URL
// without credentials, query or fragment (the token never goes in it, so
// the URL can be named in every message as it is).
func NewClient(rawURL string) (*Client, error) {
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
		return nil, fmt.Errorf("modserve: server URL %s: %w: credentials, query or fragment in it", redactURL(u), ErrBadOption)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return &Client{base: u}, nil
}
