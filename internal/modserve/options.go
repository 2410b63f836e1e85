package modserve

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Option configures the handler Handler returns. Options are applied in
// order; an invalid value fails with ErrBadOption naming it.
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// DefaultFillTimeout bounds one upstream download of a package by the
// server, unless WithFillTimeout says otherwise.
const DefaultFillTimeout = 10 * time.Minute

// DefaultClientTimeout bounds one get of a machine through a server (the
// runner's, around terraform's download) and the wait for an upstream's
// answer headers: a server that fills from upstream on a miss answers
// only once the download is done, within DefaultFillTimeout.
const DefaultClientTimeout = DefaultFillTimeout + time.Minute

type config struct {
	token       string
	log         *slog.Logger
	client      *http.Client
	upTokens    map[string]string
	maxSize     int64
	fillTimeout time.Duration
	gitRefresh  time.Duration
	hosts       map[string]bool // WithHosts; nil: any
}

func newConfig(opts []Option) (config, error) {
	c := config{log: slog.New(slog.DiscardHandler), maxSize: DefaultMaxSize, fillTimeout: DefaultFillTimeout, gitRefresh: DefaultGitRefresh}
	for _, o := range opts {
		if o == nil {
			return c, fmt.Errorf("modserve: %w: a nil Option", ErrBadOption)
		}
		if err := o.apply(&c); err != nil {
			return c, err
		}
	}
	if c.client == nil {
		c.client = defaultHTTPClient()
	}
	return c, nil
}

// defaultHTTPClient has connect, TLS and header timeouts of its own; a
// whole request is bounded by its context.
func defaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.ResponseHeaderTimeout = DefaultClientTimeout
	return &http.Client{Transport: tr}
}

// WithToken is the bearer token: the handler answers only requests
// carrying "Authorization: Bearer token" (what terraform sends for a
// TF_TOKEN_<host> of the registry host whose host block points at the
// server, and git for the header GitConfig sets). Compared in constant
// time, never logged. An empty token is refused: leave the option out
// for none.
func WithToken(token string) Option {
	return optionFunc(func(c *config) error {
		if token == "" {
			return fmt.Errorf("modserve: WithToken: %w: the token is empty (an unset secret?)", ErrBadOption)
		}
		c.token = token
		return nil
	})
}

// WithLogger sends the handler's records to l: Info for each upstream
// download, Warn for a failed request. Nil discards them, as does the
// default.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.log = l
		return nil
	})
}

// WithHTTPClient is the HTTP client the handler fetches from its upstream
// registries with. It must have timeouts of its own for connecting and
// for headers; the default has.
func WithHTTPClient(h *http.Client) Option {
	return optionFunc(func(c *config) error {
		if h == nil {
			return fmt.Errorf("modserve: WithHTTPClient: %w: nil client", ErrBadOption)
		}
		c.client = h
		return nil
	})
}

// WithUpstreamToken gives the handler a token for an upstream
// registry host, sent only to that host over https.
func WithUpstreamToken(host, token string) Option {
	return optionFunc(func(c *config) error {
		if host == "" || token == "" {
			return fmt.Errorf("modserve: WithUpstreamToken(%q): %w: empty host or token", host, ErrBadOption)
		}
		if c.upTokens == nil {
			c.upTokens = map[string]string{}
		}
		c.upTokens[host] = token
		return nil
	})
}

// WithMaxSize bounds an upstream archive and the tree it unpacks to,
// each, and a git repository's file the handler sends (DefaultMaxSize
// without it).
func WithMaxSize(n int64) Option {
	return optionFunc(func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("modserve: WithMaxSize(%d): %w: the size must be positive", n, ErrBadOption)
		}
		c.maxSize = n
		return nil
	})
}

// WithFillTimeout bounds the handler's upstream download or clone of one
// package (DefaultFillTimeout without it).
func WithFillTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("modserve: WithFillTimeout(%s): %w: the timeout must be positive", d, ErrBadOption)
		}
		c.fillTimeout = d
		return nil
	})
}

// WithGitRefresh sets how long a git repository's refs are
// served before it is cloned from upstream again (DefaultGitRefresh).
func WithGitRefresh(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("modserve: WithGitRefresh(%s): %w: the interval must be positive", d, ErrBadOption)
		}
		c.gitRefresh = d
		return nil
	})
}

// WithHosts limits what the handler fetches from upstream to
// registries and git servers on these hosts (a request for any other is
// 404, nothing fetched): without it, whoever may ask the server (all
// holders of its token) can make it fetch from any https host. Hosts are
// compared without case; a port, when given, is part of the host.
func WithHosts(hosts ...string) Option {
	return optionFunc(func(c *config) error {
		if len(hosts) == 0 {
			return fmt.Errorf("modserve: WithHosts: %w: no host", ErrBadOption)
		}
		if c.hosts == nil {
			c.hosts = map[string]bool{}
		}
		for _, h := range hosts {
			if !hostRE.MatchString(h) {
				return fmt.Errorf("modserve: WithHosts(%q): %w: not a host name", h, ErrBadOption)
			}
			c.hosts[strings.ToLower(h)] = true
		}
		return nil
	})
}
