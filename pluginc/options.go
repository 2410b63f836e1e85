package pluginc

import (
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
)

// Option configures a Cache.
type Option func(*config) error

type config struct {
	sources   []Source
	platforms []string
	client    *http.Client
	log       *slog.Logger
	getenv    func(string) (string, bool)
}

// WithSource sets the sources packages are installed from, tried in order.
// Without it the Cache uses Registry() alone.
func WithSource(sources ...Source) Option {
	return func(c *config) error {
		for i, s := range sources {
			if s == nil {
				return fmt.Errorf("pluginc: source %d is nil", i)
			}
		}
		c.sources = append(c.sources, sources...)
		return nil
	}
}

var platformRE = regexp.MustCompile(`^[a-z0-9]+_[a-z0-9]+$`)

// WithPlatforms sets the platforms (OS_ARCH, such as "linux_amd64") that
// Ensure installs for every requirement. The default is the running
// platform only. Fetching more platforms is what makes every package's
// h1: hash available for a portable lock file.
func WithPlatforms(platforms ...string) Option {
	return func(c *config) error {
		for _, p := range platforms {
			if !platformRE.MatchString(p) {
				return fmt.Errorf("%w %q: want OS_ARCH such as linux_amd64", ErrInvalidPlatform, p)
			}
		}
		c.platforms = append([]string(nil), platforms...)
		return nil
	}
}

// WithHTTPClient sets the client used for registries and network mirrors.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return fmt.Errorf("pluginc: nil HTTP client")
		}
		c.client = hc
		return nil
	}
}

// WithLogger sets where the cache reports what it does. The default
// discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l != nil {
			c.log = l
		}
		return nil
	}
}

// WithLookupEnv replaces os.LookupEnv for reading TF_TOKEN_<host>
// credentials, for callers that keep their environment elsewhere.
func WithLookupEnv(lookup func(string) (string, bool)) Option {
	return func(c *config) error {
		if lookup != nil {
			c.getenv = lookup
		}
		return nil
	}
}
