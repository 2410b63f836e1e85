package runner

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tfisolate/tfisolate/cliconfig"
	"github.com/tfisolate/tfisolate/internal/modserve"
	"github.com/tfisolate/tfisolate/internal/modstore"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// WithModuleServer has every Runner's `terraform get` fetch registry
// modules through the fleet's module server at url (ModuleServer, on
// another machine), so the fleet downloads each module version from its
// registry once: the unit's CLI config gets a host block per registry
// host its component calls, with "modules.v1" on the server (the other
// services of a host block of yours kept), and the server's token as
// that host's credentials. The token is TF_TOKEN_<server host> of the
// Runner's process, as a fleet mirror's is (pluginc.NetworkMirror);
// terraform trusts the server's certificate as it trusts any
// (SSL_CERT_FILE, the system's roots). url is https, without
// credentials, query or fragment.
//
// A server that is down, or fails the fetch, is said so: the unit's
// modules are fetched from their registries as without the option, and
// a warning in Report.Warnings (once per Run), a Warn record, a
// module-fallback event (Event.ModuleFallback) and a line in the unit's
// log name the server and what was used instead. Git modules over https
// (git::https://HOST/PATH.git?ref=...) go through the server too (git's
// url.<server>/git/HOST/.insteadOf in the environment of get, the token
// as a header sent to the server only); http, s3 and other sources are
// fetched as without the option.
func WithModuleServer(url string) Option {
	return optionFunc(func(c *config) error {
		if _, err := modserve.NewClient(url); err != nil {
			return fmt.Errorf("%w: WithModuleServer: %w", ErrBadOption, err)
		}
		c.moduleServer = url
		return nil
	})
}

// ModuleFallback says that a unit's modules were fetched from their
// registries because the module server (WithModuleServer) failed.
type ModuleFallback struct {
	// Server is the server's URL (never with credentials).
	Server string
	// Err is how it failed: terraform's error through the server, its
	// first lines.
	Err string
	// Used says where the modules came from instead.
	Used string
}

// String says which server failed, how, and where the modules came from.
func (f ModuleFallback) String() string {
	return fmt.Sprintf("module server %s failed (%s); the modules were fetched from %s instead", f.Server, f.Err, f.Used)
}

// ServerOption configures the handler ModuleServer returns.
type ServerOption interface {
	applyServer(*[]modserve.Option) error
}

type serverOptionFunc func(*[]modserve.Option) error

func (f serverOptionFunc) applyServer(o *[]modserve.Option) error { return f(o) }

// WithServerToken makes the module server answer only requests carrying
// the token (terraform sends it as the registry host's credentials, as
// WithModuleServer configures it); compared in constant time, never
// logged. An empty token is refused (an unset secret).
func WithServerToken(token string) ServerOption {
	return serverOptionFunc(func(o *[]modserve.Option) error {
		if token == "" {
			return fmt.Errorf("%w: WithServerToken: the token is empty (an unset secret?)", ErrBadOption)
		}
		*o = append(*o, modserve.WithToken(token))
		return nil
	})
}

// WithServerHTTPClient is the client the module server fetches from the
// registries with (one with its own connect and header timeouts).
func WithServerHTTPClient(h *http.Client) ServerOption {
	return serverOptionFunc(func(o *[]modserve.Option) error {
		*o = append(*o, modserve.WithHTTPClient(h))
		return nil
	})
}

// WithServerHosts limits the registries and git servers the module
// server fetches from to these hosts (others: 404, nothing fetched).
// Without it, whoever may ask the server (every holder of its token) can
// make it fetch from any https host.
func WithServerHosts(hosts ...string) ServerOption {
	return serverOptionFunc(func(o *[]modserve.Option) error {
		*o = append(*o, modserve.WithHosts(hosts...))
		return nil
	})
}

// WithServerUpstreamToken gives the module server a token for a
// registry host it fetches from, sent to that host only, over https.
func WithServerUpstreamToken(host, token string) ServerOption {
	return serverOptionFunc(func(o *[]modserve.Option) error {
		*o = append(*o, modserve.WithUpstreamToken(host, token))
		return nil
	})
}

// WithServerLogger sends the server's records (each upstream download,
// each failed request) to l.
func WithServerLogger(l *slog.Logger) ServerOption {
	return serverOptionFunc(func(o *[]modserve.Option) error {
		*o = append(*o, modserve.WithLogger(l))
		return nil
	})
}

// ModuleServer returns an http.Handler serving the module store in dir
// (a private dir, as WithModuleStore's) to a fleet, for WithModuleServer
// and for plain terraform with a CLI config host block
// ("modules.v1" = "https://SERVER/modules.v1/HOST/"). It speaks the
// module registry protocol: versions are the registry's; a version's
// download is fetched from its registry once (under the store's flock,
// for every process sharing dir) and served from the store, packed from
// the verified entry and checked file by file, with its SHA-256 for
// terraform to check; a git repository (git::https sources) is cloned
// once and served over git's dumb HTTP protocol under /git/, each file
// checked as it is sent. Serve it from your own http.Server with a
// certificate: clients speak https only.
func ModuleServer(dir string, opts ...ServerOption) (http.Handler, error) {
	var mo []modserve.Option
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: ModuleServer: a nil ServerOption", ErrBadOption)
		}
		if err := o.applyServer(&mo); err != nil {
			return nil, err
		}
	}
	s, err := modstore.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("module server: %w", err)
	}
	h, err := modserve.Handler(s, mo...)
	if err != nil {
		return nil, fmt.Errorf("%w: module server: %w", ErrBadOption, err)
	}
	return h, nil
}

// registryHosts are the hosts of the registry modules among calls, in
// order, once each.
func registryHosts(calls []modtree.Call, defaultHost string) []string {
	var hosts []string
	for _, c := range calls {
		if c.Local || c.Dynamic {
			continue
		}
		if h, ok := modserve.RegistryHost(c.Source, defaultHost); ok && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// gitHosts are the hosts of the git::https modules among calls, in
// order, once each.
func gitHosts(calls []modtree.Call) []string {
	var hosts []string
	for _, c := range calls {
		if c.Local || c.Dynamic {
			continue
		}
		if h, ok := modserve.GitHost(c.Source); ok && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// serverCLIConfig is the user's CLI config (nil: none) with each of
// hosts sent to the module server: its host block's "modules.v1" on the
// server, and the server's token (if any) as its credentials; the user's
// own credentials for such a host are never sent to the server.
func serverCLIConfig(user *cliconfig.File, server, token string, hosts []string) *cliconfig.File {
	f := cliconfig.File{}
	if user != nil {
		f = *user
	}
	f.Hosts = cloneMap(f.Hosts)
	f.Credentials = cloneMap(f.Credentials)
	for _, h := range hosts {
		services := map[string]any{}
		for k, v := range f.Hosts[h] {
			services[k] = v
		}
		u, _ := url.Parse(server) // checked by WithModuleServer
		services["modules.v1"] = u.JoinPath("modules.v1", h).String() + "/"
		f.Hosts[h] = services
		delete(f.Credentials, h)
		if token != "" {
			f.Credentials[h] = map[string]any{"token": token}
		}
	}
	return &f
}

func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// tokenVar is the TF_TOKEN_ variable terraform reads for host (a port
// dropped, dots as underscores, dashes as double underscores).
func tokenVar(host string) string {
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	return "TF_TOKEN_" + strings.ReplaceAll(strings.ReplaceAll(host, "-", "__"), ".", "_")
}

// getCLIConfig renders what `terraform get` reads of a CLI config
// (credentials, a credentials helper, host blocks, the checkpoint
// settings) as terraform's JSON form, for a unit without a plugin cache
// (with one, the cache's CLIConfigFor renders it whole).
func getCLIConfig(f *cliconfig.File) ([]byte, error) {
	doc := map[string]any{}
	if len(f.Credentials) > 0 {
		doc["credentials"] = f.Credentials
	}
	if len(f.CredentialsHelpers) > 0 {
		helpers := map[string]map[string][]string{}
		for name, args := range f.CredentialsHelpers {
			h := map[string][]string{}
			if args != nil {
				h["args"] = args
			}
			helpers[name] = h
		}
		doc["credentials_helper"] = helpers
	}
	if len(f.Hosts) > 0 {
		hosts := map[string]any{}
		for name, services := range f.Hosts {
			hosts[name] = map[string]any{"services": services}
		}
		doc["host"] = hosts
	}
	if f.DisableCheckpoint {
		doc["disable_checkpoint"] = true
	}
	if f.DisableCheckpointSignature {
		doc["disable_checkpoint_signature"] = true
	}
	return json.Marshal(doc)
}
