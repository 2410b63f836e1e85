// This file is the example's offline stand-in and the only one that
// imports the SDK's internal packages: it finds terraform, writes the
// components the fleet applies, serves a small test provider and a
// registry module from a loopback registry (the mirror's and the module
// server's upstream, reached through its address and CA file), makes up
// a certificate for the fleet's mirror, which the machines' runners and
// terraform then trust, and serves the fleet's one state backend
// (terraform's http backend, on loopback). Delete it when you copy the
// example: give each machine your terraform (or none: the runner finds
// it) and your checkout's component directories, the mirror your
// registry (pluginc.Open(dir) alone installs from the public one) and
// your certificate, and the units your remote backend (S3, say).

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
)

// offline is what every machine gets from the stand-in; the parent hands
// it to the apply jobs as JSON.
type offline struct {
	Terraform string `json:"terraform"`  // the terraform executable
	VPCSource string `json:"vpc_source"` // the vpc component's directory
	Source    string `json:"source"`     // the elasticache component's directory
	Registry  struct {
		Host   string `json:"host"`    // its host name
		Addr   string `json:"addr"`    // the loopback address it listens on
		CAFile string `json:"ca_file"` // its certificate authority
	} `json:"registry"`
	// State is the base URL of the fleet's state backend: the state of
	// the units named NAME is at State+"/"+NAME.
	State string `json:"state"`
	// MirrorCert is the certificate made up for the mirror, which every
	// machine's terraform trusts (SSL_CERT_FILE) to reach the module
	// server on it.
	MirrorCert string `json:"mirror_cert"`

	downloads       func() int // packages the registry served (the parent's only)
	moduleDownloads func() int // module archives the registry served (the parent's only)
	close           func()     // stops the registry and the state backend (the parent's only)
}

// startOffline sets the stand-in up under root; the states live in
// stateDir.
func startOffline(ctx context.Context, root, stateDir string) (*offline, error) {
	env, err := demo.SetupOffline(ctx, root, 0)
	if err != nil {
		return nil, err
	}
	states, err := serveStates(stateDir, filepath.Join(root, "state-addr"))
	if err != nil {
		env.Close()
		return nil, err
	}
	vpc, err := taggedVPC(env, filepath.Join(root, "components", "vpc"))
	if err != nil {
		states.Close()
		env.Close()
		return nil, err
	}
	o := &offline{Terraform: env.Terraform, VPCSource: vpc, Source: env.Source(demo.Component),
		State: states.URL + "/state", MirrorCert: filepath.Join(root, "mirror.pem"), downloads: env.Provider.Downloads,
		moduleDownloads: func() int {
			return env.Provider.ModuleDownloads(testregistry.ModuleKey(tagsModule[0], tagsModule[1], tagsModule[2], tagsVersion))
		},
		close: func() { states.Close(); env.Close() }}
	o.Registry.Host, o.Registry.Addr = env.Provider.Host(), env.Provider.Addr()
	o.Registry.CAFile = filepath.Join(root, "registry-ca.pem")
	if err := env.Provider.WriteCAFile(o.Registry.CAFile); err != nil {
		o.close()
		return nil, err
	}
	return o, nil
}

// tagsModule is the registry module the fleet's VPC calls (namespace,
// name, system), published by the loopback registry at tagsVersion.
var tagsModule = [3]string{"tfisolate", "tags", "tfitest"}

const tagsVersion = "1.0.0"

// taggedVPC publishes the tags module on the loopback registry and
// writes the fleet's VPC component into dir: the demo's VPC and a call of
// the module, so every machine that plans or applies it fetches a
// registry module (through the fleet's module server).
func taggedVPC(env *demo.Offline, dir string) (string, error) {
	if err := env.Provider.AddModule(tagsModule[0], tagsModule[1], tagsModule[2], tagsVersion, map[string]string{
		"main.tf": `variable "name" { type = string }
output "tags" { value = { Name = var.name, ManagedBy = "tfisolate" } }
`}); err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.CopyFS(dir, os.DirFS(env.Source(demo.VPCComponent))); err != nil {
		return "", err
	}
	call := fmt.Sprintf(`module "tags" {
  source  = %q
  version = "~> 1.0"
  name    = var.name
}

output "tags" { value = module.tags.tags }
`, env.Provider.ModuleSource(tagsModule[0], tagsModule[1], tagsModule[2]))
	return dir, os.WriteFile(filepath.Join(dir, "tags.tf"), []byte(call), 0o644)
}

// serverOptions are the module server's options for the registry: a
// client that trusts its CA and dials it on loopback.
func (o *offline) serverOptions() []runner.ServerOption {
	ca, err := os.ReadFile(o.Registry.CAFile)
	if err != nil {
		return nil // the server then reports the registry unreachable, by name
	}
	hc, err := testregistry.NewClient(o.Registry.Host, o.Registry.Addr, ca)
	if err != nil {
		return nil
	}
	return []runner.ServerOption{runner.WithServerHTTPClient(hc)}
}

// engineEnv is every unit's environment: terraform trusts the mirror's
// made-up certificate, to reach the module server on it.
func (o *offline) engineEnv() map[string]string {
	return map[string]string{"SSL_CERT_FILE": o.MirrorCert}
}

// serveStates serves the states in dir on loopback, at the address kept
// in addrFile when a run before this one left it there: the backend's
// address is part of every unit's configuration, and a changed one is a
// changed backend, which init refuses.
func serveStates(dir, addrFile string) (*httptest.Server, error) {
	addr := "127.0.0.1:0"
	if b, err := os.ReadFile(addrFile); err == nil {
		addr = string(b)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("state backend (its address is kept in %s): %w", addrFile, err)
	}
	if err := os.WriteFile(addrFile, []byte(l.Addr().String()), 0o644); err != nil {
		l.Close()
		return nil, err
	}
	srv := httptest.NewUnstartedServer(&stateServer{dir: dir})
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return srv, nil
}

// stateServer is the fleet's state backend, for terraform's http
// backend: each state a file NAME.tfstate in dir (so a second run of the
// fleet finds them), its lock held here. Every machine reaches it, as
// every machine of a real fleet reaches its S3 bucket: a plan bundle
// needs that (ExportPlan refuses a unit whose state is local).
type stateServer struct {
	dir   string
	mu    sync.Mutex
	locks map[string][]byte // name: the holder's lock info, as sent
}

var stateNameRe = regexp.MustCompile(`^/state/([A-Za-z0-9._-]+)$`)

func (s *stateServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := stateNameRe.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.Error(w, "want /state/NAME", http.StatusNotFound)
		return
	}
	p := filepath.Join(s.dir, m[1]+".tfstate")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locks == nil {
		s.locks = map[string][]byte{}
	}
	held := s.locks[m[1]]
	switch r.Method {
	case http.MethodGet:
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			http.Error(w, "no state", http.StatusNotFound) // terraform: empty
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(b)
	case http.MethodPost, http.MethodDelete:
		var id struct{ ID string }
		if held != nil && (json.Unmarshal(held, &id) != nil || r.URL.Query().Get("ID") != id.ID) {
			w.WriteHeader(http.StatusLocked) // only the lock's holder writes
			_, _ = w.Write(held)
			return
		}
		if r.Method == http.MethodDelete {
			err = os.Remove(p)
		} else {
			tmp := p + ".tmp"
			err = errors.Join(os.WriteFile(tmp, body, 0o600), os.Rename(tmp, p))
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	case "LOCK":
		if held != nil {
			w.WriteHeader(http.StatusLocked) // terraform names the holder
			_, _ = w.Write(held)
			return
		}
		s.locks[m[1]] = body
	case "UNLOCK":
		delete(s.locks, m[1])
	default:
		http.Error(w, "want GET, POST, DELETE, LOCK or UNLOCK", http.StatusMethodNotAllowed)
	}
}

// backend is the backend.tf.json of the unit whose state is named name:
// terraform's http backend on the fleet's state server.
func (o *offline) backend(name string) []byte {
	state := o.State + "/" + name
	b, _ := json.Marshal(map[string]any{"terraform": map[string]any{"backend": map[string]any{
		"http": map[string]string{"address": state, "lock_address": state, "unlock_address": state}}}})
	return b // a map of strings always marshals
}

// cacheOptions are a machine's provider cache options for the registry:
// its protocol, and a client that trusts its CA and dials it on loopback.
func (o *offline) cacheOptions() ([]pluginc.Option, error) {
	ca, err := os.ReadFile(o.Registry.CAFile)
	if err != nil {
		return nil, fmt.Errorf("registry CA: %w", err)
	}
	hc, err := testregistry.NewClient(o.Registry.Host, o.Registry.Addr, ca)
	if err != nil {
		return nil, err
	}
	return []pluginc.Option{pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(hc)}, nil
}

// serveTLS serves h on loopback over TLS with a certificate made up for
// it, written to certFile for the machines to trust, and returns its URL.
// Yours: an http.Server with your own certificate.
func serveTLS(h http.Handler, certFile string) (url string, stop func(), err error) {
	srv := httptest.NewTLSServer(h)
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(certFile, cert, 0o644); err != nil {
		srv.Close()
		return "", nil, err
	}
	return srv.URL + "/", srv.Close, nil
}

// mirrorOptions are a machine's provider cache options for the fleet's
// mirror at url: its protocol, and a client that trusts the certificate
// in certFile. Yours: pluginc.WithSource(pluginc.NetworkMirror(url)).
func mirrorOptions(url, certFile string) ([]pluginc.Option, error) {
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("mirror certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cert) {
		return nil, fmt.Errorf("no certificate in %s", certFile)
	}
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DialContext:     (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	}}
	return []pluginc.Option{pluginc.WithSource(pluginc.NetworkMirror(url)), pluginc.WithHTTPClient(hc)}, nil
}

// resolveRoot is the -root flag's value made absolute, or, when empty, a
// directory for the example under the user cache dir.
func resolveRoot(flagValue string) (string, error) { return demo.Root(flagValue, "fleet") }
