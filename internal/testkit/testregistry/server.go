package testregistry

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// DefaultHost is the host name the server presents unless WithHost says
// otherwise. It is the test provider's registry host.
const DefaultHost = "registry.tfisolate.test"

// Package is one provider package the server offers.
type Package struct {
	Namespace, Type, Version string
	Platform                 string // OS_ARCH, such as linux_amd64
	Zip                      []byte
}

// Filename is the conventional zip name of p.
func (p Package) Filename() string {
	return "terraform-provider-" + p.Type + "_" + p.Version + "_" + p.Platform + ".zip"
}

// Key identifies p in Downloads: NS/TYPE/VERSION/OS_ARCH.
func (p Package) Key() string {
	return p.Namespace + "/" + p.Type + "/" + p.Version + "/" + p.Platform
}

// Fault is a way for the server to misbehave on purpose.
type Fault int

const (
	// FaultNone serves everything correctly.
	FaultNone Fault = iota
	// FaultWrongChecksum lists a wrong SHA-256 for every package (in the
	// correctly signed SHA256SUMS, the download metadata and the mirror's
	// hashes), so the package does not match.
	FaultWrongChecksum
	// FaultBadSignature signs SHA256SUMS with a key the registry does not list.
	FaultBadSignature
	// FaultTruncated cuts package bodies in half after announcing their full length.
	FaultTruncated
	// FaultStatus500 answers package downloads with 500 Internal Server Error.
	FaultStatus500
	// FaultStallHeaders makes package downloads send nothing, not even
	// headers, until the client goes away or the server closes.
	FaultStallHeaders
	// FaultStallBody makes package downloads send their headers and the
	// first half of the body, then nothing more until the client goes
	// away or the server closes.
	FaultStallBody
	// FaultTooManyRequestsOnce answers the next package download with 429
	// Too Many Requests and "Retry-After: 1" (RetryAfterSeconds), then
	// behaves (the fault resets to FaultNone).
	FaultTooManyRequestsOnce
	// FaultUnavailableOnce answers the next package download with 503
	// Service Unavailable without Retry-After, then behaves.
	FaultUnavailableOnce
	// FaultOversize pads every download metadata document with JSON
	// whitespace to OversizeBytes, past any sane limit for a document.
	FaultOversize
)

// RetryAfterSeconds is the Retry-After that FaultTooManyRequestsOnce sends.
const RetryAfterSeconds = 1

// OversizeBytes is the size FaultOversize pads documents to: 9 MiB.
const OversizeBytes = 9 << 20

// Option configures a Server.
type Option func(*Server)

// WithHost sets the host name the certificate is issued for.
func WithHost(h string) Option { return func(s *Server) { s.host = h } }

// WithToken makes the registry API (/v1/...) require "Authorization:
// Bearer tok".
func WithToken(tok string) Option { return func(s *Server) { s.token = tok } }

// WithThrottle limits every package download to bytesPerSec.
func WithThrottle(bytesPerSec int64) Option { return func(s *Server) { s.throttle.Store(bytesPerSec) } }

// WithLogger logs every request.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// Server is a running loopback registry and network mirror.
type Server struct {
	host  string
	token string
	log   *slog.Logger
	srv   *httptest.Server
	certs *certs
	keys  *keys

	throttle atomic.Int64
	requests atomic.Int64

	closed    chan struct{} // closed by Close: ends stalled responses
	closeOnce sync.Once

	mu          sync.Mutex
	mirrorHosts map[string]bool    // origin hosts the network mirror also serves
	pkgs        map[string]Package // by Key
	hashes      map[string]hashes  // by Key, computed once in Add
	fault       Fault
	gate        *Gate
	downloads   map[string]int

	plain        *httptest.Server // PlainHTTP's listener, nil until started
	archiveBase  string           // SetArchiveBase
	redirectBase string           // RedirectDownloads
	authSeen     []string         // AuthorizedRequests

	modules      map[string]module // by ModuleKey
	modFormat    ArchiveFormat
	modDownloads map[string]int
}

// New starts a server. Call Close when done.
func New(opts ...Option) (*Server, error) {
	s := &Server{host: DefaultHost, pkgs: map[string]Package{}, hashes: map[string]hashes{}, downloads: map[string]int{}, closed: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.certs, err = newCerts(s.host); err != nil {
		return nil, fmt.Errorf("testregistry: certificate: %w", err)
	}
	if s.keys, err = newKeys(); err != nil {
		return nil, fmt.Errorf("testregistry: signing key: %w", err)
	}
	s.srv = httptest.NewUnstartedServer(s.routes())
	s.srv.EnableHTTP2 = true
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{s.certs.leaf}, MinVersion: tls.VersionTLS12}
	s.srv.StartTLS()
	return s, nil
}

// Close stops the server, releasing any held download first.
func (s *Server) Close() {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	if g != nil {
		g.Release()
	}
	s.closeOnce.Do(func() { close(s.closed) })
	s.srv.Close()
	s.mu.Lock()
	plain := s.plain
	s.mu.Unlock()
	if plain != nil {
		plain.Close()
	}
}

// Host returns the host name the server answers to.
func (s *Server) Host() string { return s.host }

// Addr returns the loopback "ip:port" the server listens on.
func (s *Server) Addr() string { return s.srv.Listener.Addr().String() }

// URL returns https://HOST, the registry's base as its clients see it.
func (s *Server) URL() string { return "https://" + s.host }

// MirrorURL returns the network mirror's base URL.
func (s *Server) MirrorURL() string { return "https://" + s.host + "/" }

// LoopbackURL returns https://IP:PORT/, the network mirror's base for
// clients that cannot resolve Host (terraform itself, given the CA through
// SSL_CERT_FILE). The certificate is valid for the loopback IPs too.
func (s *Server) LoopbackURL() string { return "https://" + s.Addr() + "/" }

// ArmoredPublicKey returns the registry's signing key.
func (s *Server) ArmoredPublicKey() string { return s.keys.armored }

var partRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._-]*$`)

// Add offers a package. Adding the same key again replaces it.
func (s *Server) Add(p Package) error {
	for _, part := range []string{p.Namespace, p.Type, p.Version, p.Platform} {
		if !partRE.MatchString(part) {
			return fmt.Errorf("%w %q: bad name part %q", ErrBadPackage, p.Key(), part)
		}
	}
	if !strings.Contains(p.Platform, "_") {
		return fmt.Errorf("%w %q: platform must be OS_ARCH", ErrBadPackage, p.Key())
	}
	if len(p.Zip) == 0 {
		return fmt.Errorf("%w %q: empty zip", ErrBadPackage, p.Key())
	}
	// Hashed here, once, so documents are served at once, as a real
	// registry or mirror serves them: hashing a large zip per request
	// would make the server, not the client under test, what a loaded
	// machine's request timeouts measure.
	h := hashes{sha: sha256Hex(p.Zip)}
	h.h1, h.h1Err = h1Of(h.sha, p.Zip)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pkgs[p.Key()] = p
	s.hashes[p.Key()] = h
	return nil
}

// h1Memo maps a zip's SHA-256 (hex) to its h1: hash, for every server of
// the test binary: the tests add the same provider zips to server after
// server, and h1: decompresses the whole zip, about half a second of CPU
// for the 15 MB test provider under -race, every time.
var h1Memo sync.Map // string -> h1Result

type h1Result struct {
	h1  string
	err error
}

// h1Of returns hashZip(zip), computed once per content (sha is its
// SHA-256): the hash is a function of the bytes alone.
func h1Of(sha string, zip []byte) (string, error) {
	if r, ok := h1Memo.Load(sha); ok {
		return r.(h1Result).h1, r.(h1Result).err
	}
	h1, err := hashZip(zip)
	h1Memo.Store(sha, h1Result{h1, err})
	return h1, err
}

// hashes are a package's SHA-256 (hex) and h1: (or why it has none: a
// zip that cannot be read).
type hashes struct {
	sha, h1 string
	h1Err   error
}

// hashesOf returns the hashes Add computed for p.
func (s *Server) hashesOf(p Package) hashes {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hashes[p.Key()]
}

// AddFile offers the zip at path as a package.
func (s *Server) AddFile(namespace, typ, version, platform, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadPackage, err)
	}
	return s.Add(Package{Namespace: namespace, Type: typ, Version: version, Platform: platform, Zip: b})
}

// SetFault makes every later request misbehave as f (FaultNone to stop).
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	s.fault = f
	s.mu.Unlock()
}

// MirrorHosts makes the network mirror also serve its packages under
// the given origin hostnames, as a company mirror serves providers whose
// addresses name a public registry: a short address such as
// "tfisolate/tfitest" resolves on the engine's default registry host, and
// a mirror listing that host answers for it.
func (s *Server) MirrorHosts(hosts ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mirrorHosts == nil {
		s.mirrorHosts = map[string]bool{}
	}
	for _, h := range hosts {
		s.mirrorHosts[h] = true
	}
}

func (s *Server) mirrors(host string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return host == s.host || s.mirrorHosts[host]
}

// SetThrottle changes the download speed limit (0 = unlimited).
func (s *Server) SetThrottle(bytesPerSec int64) { s.throttle.Store(bytesPerSec) }

// Requests returns the number of requests served so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Downloads returns how many GET requests the package with the given Key
// got, failed and faulty ones included (HEAD probes are not counted).
func (s *Server) Downloads(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads[key]
}

// TotalDownloads returns the number of package requests of all packages.
func (s *Server) TotalDownloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.downloads {
		n += c
	}
	return n
}

// takeOnce reports whether f is the current fault and, if it is a
// once-only fault, resets it so only one request sees it.
func (s *Server) takeOnce(f Fault) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fault != f {
		return false
	}
	if f == FaultTooManyRequestsOnce || f == FaultUnavailableOnce {
		s.fault = FaultNone
	}
	return true
}

func (s *Server) state() (Fault, *Gate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fault, s.gate
}

// versionPackages returns the packages of one provider version, sorted by
// platform.
func (s *Server) versionPackages(ns, typ, ver string) []Package {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Package
	for _, p := range s.pkgs {
		if p.Namespace == ns && p.Type == typ && p.Version == ver {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Platform < out[j].Platform })
	return out
}

func (s *Server) providerPackages(ns, typ string) []Package {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Package
	for _, p := range s.pkgs {
		if p.Namespace == ns && p.Type == typ {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

func (s *Server) pkg(ns, typ, ver, platform string) (Package, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pkgs[ns+"/"+typ+"/"+ver+"/"+platform]
	return p, ok
}

// sums returns the SHA256SUMS document of a provider version and its
// detached signature, honouring the current fault.
func (s *Server) sums(ns, typ, ver string, f Fault) ([]byte, []byte, error) {
	var doc bytes.Buffer
	for _, p := range s.versionPackages(ns, typ, ver) {
		fmt.Fprintf(&doc, "%s  %s\n", s.sha(p, f), p.Filename())
	}
	signer := s.keys.entity
	if f == FaultBadSignature {
		signer = s.keys.stranger
	}
	var sig bytes.Buffer
	if err := openpgp.DetachSign(&sig, signer, bytes.NewReader(doc.Bytes()), nil); err != nil {
		return nil, nil, err
	}
	return doc.Bytes(), sig.Bytes(), nil
}

// sha returns the hex SHA-256 the server claims for p.
func (s *Server) sha(p Package, f Fault) string {
	if f == FaultWrongChecksum {
		return sha256Hex(append([]byte("not the package"), p.Zip...))
	}
	return s.hashesOf(p).sha
}

func (s *Server) authorized(r *http.Request) bool {
	return s.token == "" || r.Header.Get("Authorization") == "Bearer "+s.token
}
