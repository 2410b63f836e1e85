package pluginc

import (
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	svchost "github.com/hashicorp/terraform-svchost"

	"github.com/tfisolate/tfisolate/cliconfig"
)

// Option configures a Cache. Options are applied in order; Open fails with
// an error naming the first option whose value is invalid.
type Option interface {
	apply(*config) error
}

// optionFunc is the one implementation of Option.
type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// Defaults of the network and size limits; see the With* option of each.
const (
	DefaultConnectTimeout  = 30 * time.Second
	DefaultHeaderTimeout   = 60 * time.Second
	DefaultBodyIdleTimeout = 60 * time.Second
	DefaultMetadataTimeout = 10 * time.Second // as Terraform's own registry client
	DefaultRequestTimeout  = 2 * time.Minute
	DefaultRetries         = 4
	DefaultRetryWaitMin    = 1 * time.Second
	DefaultRetryWaitMax    = 30 * time.Second
	DefaultMaxUnpackedSize = 2 << 30 // 2 GiB
	// MaxDocumentSize is the largest document (registry JSON, SHA256SUMS,
	// signature) the cache reads; a larger one is an error.
	MaxDocumentSize = 8 << 20 // 8 MiB
)

type config struct {
	sources   []Source
	platforms []string
	client    *http.Client
	log       *slog.Logger
	getenv    func(string) (string, bool)
	net       netLimits
	maxUnpack int64
	cli       cliClient
	shared    bool
	gid       int
}

// cliClient is what the cache takes from a user's CLI config for its own
// requests: tokens and service overrides by host (comparison form).
type cliClient struct {
	tokens map[string]string
	hosts  map[string]map[string]any
	path   string
}

// netLimits bounds every HTTP request the cache makes.
type netLimits struct {
	connect, header, idle time.Duration
	meta                  time.Duration // one attempt at a small document, start to end
	request               time.Duration // one request, every attempt and wait included
	retries               int
	waitMin, waitMax      time.Duration
	maxDoc                int64
}

func defaultConfig() config {
	return config{
		net: netLimits{
			connect: DefaultConnectTimeout, header: DefaultHeaderTimeout, idle: DefaultBodyIdleTimeout,
			meta: DefaultMetadataTimeout, request: DefaultRequestTimeout,
			retries: DefaultRetries, waitMin: DefaultRetryWaitMin, waitMax: DefaultRetryWaitMax,
			maxDoc: MaxDocumentSize,
		},
		maxUnpack: DefaultMaxUnpackedSize,
	}
}

// WithSource sets the sources packages are installed from, tried in order.
// Without it the Cache uses Registry() alone.
func WithSource(sources ...Source) Option {
	return optionFunc(func(c *config) error {
		for i, s := range sources {
			if s == nil {
				return fmt.Errorf("pluginc: WithSource: source %d is nil", i)
			}
		}
		c.sources = append(c.sources, sources...)
		return nil
	})
}

var platformRE = regexp.MustCompile(`^[a-z0-9]+_[a-z0-9]+$`)

// WithPlatforms sets the platforms (OS_ARCH, such as "linux_amd64") that
// Ensure installs for every requirement. The default is the running
// platform only. Fetching more platforms is what makes every package's
// h1: hash available for a portable lock file.
func WithPlatforms(platforms ...string) Option {
	return optionFunc(func(c *config) error {
		for _, p := range platforms {
			if !platformRE.MatchString(p) {
				return fmt.Errorf("pluginc: WithPlatforms: %w %q: want OS_ARCH such as linux_amd64", ErrInvalidPlatform, p)
			}
		}
		c.platforms = append([]string(nil), platforms...)
		return nil
	})
}

// WithHTTPClient sets the client used for registries and network mirrors.
// The cache's own timeouts and retries apply on top of whatever the client
// does: a client without timeouts cannot make a request hang. The cache
// uses a copy whose redirect policy refuses https-to-http redirects and
// keeps credentials at their scheme, host and port before calling hc's
// own CheckRedirect; hc itself is not changed.
func WithHTTPClient(hc *http.Client) Option {
	return optionFunc(func(c *config) error {
		if hc == nil {
			return fmt.Errorf("pluginc: WithHTTPClient: nil client")
		}
		c.client = hc
		return nil
	})
}

// WithLogger sets where the cache reports what it does. The default, and
// WithLogger(nil), discards everything.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) error {
		c.log = l
		return nil
	})
}

// WithCLIConfig makes the cache's own requests use a user's CLI config
// file (see cliconfig.Read and cliconfig.Find), as Terraform would: a credentials block's
// token is sent to that host (a registry's API, a network mirror), and a
// host block's "providers.v1" service is used instead of service
// discovery for that host. A TF_TOKEN_<host> variable (see WithLookupEnv)
// still wins over a credentials block, as in Terraform. A
// credentials_helper is never run by the cache (Terraform runs it, given
// the merged config from CLIConfigFor): a host whose token only a helper
// knows needs a TF_TOKEN_<host> variable for the cache's downloads. The
// file's provider_installation is not used here; see
// SourcesFrom. WithCLIConfig(nil) means no file (the default).
func WithCLIConfig(f *cliconfig.File) Option {
	return optionFunc(func(c *config) error {
		c.cli = cliClient{}
		if f == nil {
			return nil
		}
		cli := cliClient{tokens: map[string]string{}, hosts: map[string]map[string]any{}, path: f.Path}
		for host, attrs := range f.Credentials {
			h, err := svchost.ForComparison(host)
			if err != nil {
				return fmt.Errorf("pluginc: WithCLIConfig: %w", &cliconfig.Error{Path: f.Path, Msg: fmt.Sprintf("the credentials %q block has an invalid host name: %v", host, err)})
			}
			tok, ok := attrs["token"]
			if !ok {
				continue
			}
			s, ok := tok.(string)
			if !ok {
				return fmt.Errorf("pluginc: WithCLIConfig: %w", &cliconfig.Error{Path: f.Path, Msg: fmt.Sprintf("credentials %q: token must be a string", host)})
			}
			cli.tokens[h.String()] = s
		}
		for host, services := range f.Hosts {
			h, err := svchost.ForComparison(host)
			if err != nil {
				return fmt.Errorf("pluginc: WithCLIConfig: %w", &cliconfig.Error{Path: f.Path, Msg: fmt.Sprintf("the host %q block has an invalid host name: %v", host, err)})
			}
			cli.hosts[h.String()] = services
		}
		c.cli = cli
		return nil
	})
}

// WithLookupEnv replaces os.LookupEnv for reading TF_TOKEN_<host>
// credentials, for callers that keep their environment elsewhere. nil
// restores os.LookupEnv.
func WithLookupEnv(lookup func(string) (string, bool)) Option {
	return optionFunc(func(c *config) error {
		c.getenv = lookup
		return nil
	})
}

func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("pluginc: %s: %s is not a positive duration", name, d)
	}
	return nil
}

// WithConnectTimeout bounds how long one attempt may take to get a
// connection (dial and TLS handshake) once it asks for one. Default
// DefaultConnectTimeout (30s). A timed-out attempt is retried.
func WithConnectTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if err := positive("WithConnectTimeout", d); err != nil {
			return err
		}
		c.net.connect = d
		return nil
	})
}

// WithHeaderTimeout bounds how long one attempt may wait for the response
// headers once it has a connection. Default DefaultHeaderTimeout (60s). A
// timed-out attempt is retried.
func WithHeaderTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if err := positive("WithHeaderTimeout", d); err != nil {
			return err
		}
		c.net.header = d
		return nil
	})
}

// WithBodyIdleTimeout bounds how long a response body may go without
// delivering a byte; a slow body that keeps making progress is never cut.
// Default DefaultBodyIdleTimeout (60s). A stalled attempt is retried from
// the start.
func WithBodyIdleTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if err := positive("WithBodyIdleTimeout", d); err != nil {
			return err
		}
		c.net.idle = d
		return nil
	})
}

// WithMetadataTimeout bounds one attempt at a small document (service
// discovery, a version list, a download description, SHA256SUMS and its
// signature, a mirror's index), from the request to the end of its body,
// as Terraform's own registry client bounds its requests. Default
// DefaultMetadataTimeout (10s). A timed-out attempt is retried. Package
// downloads are not bounded by it (see WithBodyIdleTimeout), nor is a
// network mirror's VERSION.json: a mirror in front of a cache (as
// MirrorHandler) answers it only once it has fetched the package
// upstream, which takes as long as that download; the header and
// request timeouts still hold.
func WithMetadataTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if err := positive("WithMetadataTimeout", d); err != nil {
			return err
		}
		c.net.meta = d
		return nil
	})
}

// WithRequestTimeout bounds one request as a whole, every attempt and
// every wait between them included, so a stalled registry or mirror
// cannot hold an install for longer whatever the retries. Past it no
// attempt starts and none waits for its response any longer; the error
// is a *RequestError that says how many attempts were made over how long
// and wraps ErrTimeout. The one thing it does not cut is a package body
// that keeps arriving: a slow but healthy download of a large provider
// is bounded by WithBodyIdleTimeout instead. Default
// DefaultRequestTimeout (2m).
func WithRequestTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if err := positive("WithRequestTimeout", d); err != nil {
			return err
		}
		c.net.request = d
		return nil
	})
}

// WithRetries sets how many times a failed request is retried: after a
// connection error, a timeout, a body cut short, HTTP 429 or a 5xx status
// other than 501, as long as the request timeout (WithRequestTimeout)
// leaves time for it. 0 turns retries off. Default DefaultRetries (4).
func WithRetries(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 0 {
			return fmt.Errorf("pluginc: WithRetries: %d is negative", n)
		}
		c.net.retries = n
		return nil
	})
}

// WithRetryWait sets the backoff between retries: min doubled per attempt,
// at most max. A Retry-After header on a 429 or 503 is honoured instead,
// unless it asks for more than max: then the request fails at once with
// an error saying how long the server asked to wait. Defaults
// DefaultRetryWaitMin (1s) and DefaultRetryWaitMax (30s).
func WithRetryWait(min, max time.Duration) Option {
	return optionFunc(func(c *config) error {
		if err := positive("WithRetryWait", min); err != nil {
			return err
		}
		if max < min {
			return fmt.Errorf("pluginc: WithRetryWait: max %s is less than min %s", max, min)
		}
		c.net.waitMin, c.net.waitMax = min, max
		return nil
	})
}

// WithMaxUnpackedSize caps the total size of a package's files once
// unpacked; an archive that would unpack to more is refused with
// ErrBadPackage before anything it holds lands in the cache. Default
// DefaultMaxUnpackedSize (2 GiB).
func WithMaxUnpackedSize(n int64) Option {
	return optionFunc(func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("pluginc: WithMaxUnpackedSize: %d is not a positive size", n)
		}
		c.maxUnpack = n
		return nil
	})
}

// WithSharedGroup shares the cache with the members of group gid, on
// purpose. Without it, Open and every use refuse (ErrUnsafePath) a cache
// root, a dir above it or a dir in it that anyone but the effective user
// or root owns or can write to, as ssh and gpg refuse such dirs. With it,
// such a dir is also accepted when its group is gid and others (users
// outside the group) cannot write to it; a dir above the root may still
// be sticky and writable by all, as /tmp is, never the root itself.
//
// What the group can then do: every member can add, replace and remove
// entries, install records and lock files, so any member can make
// installs fail or repeat (deny service), and can plant a package
// together with a record that matches it. What the group cannot do: get
// a planted package used. In this mode no record is believed: before the
// first use of an entry in a process, the cache downloads the package
// from its source again, verifies it as on a first install (the SHA-256
// of its zip against the source's signed SHA256SUMS, that is its zh:
// hash, or a mirror's hashes) and compares the entry's files with it; an
// entry that differs is replaced by the verified package (Stats.Repairs).
// Package hashes, and so LockFile, come from that verification only. The
// cost is that download, once per package per process (Stats.Verifies).
// Terraform itself re-checks the package against the lock file when it
// runs, so a package swapped after the check is refused by terraform.
//
// Dirs the cache creates get group gid and mode 2775 (group-writable,
// new entries inherit the group), whatever the umask; lock files are
// readable by the group. A root Open creates gets the same; an existing
// root keeps its owner, group and mode. Supported on Unix only.
func WithSharedGroup(gid int) Option {
	return optionFunc(func(c *config) error {
		if gid < 0 {
			return fmt.Errorf("pluginc: WithSharedGroup: %d is not a group id", gid)
		}
		c.shared, c.gid = true, gid
		return nil
	})
}
