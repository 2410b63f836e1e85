package pluginc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/ProtonMail/go-crypto/openpgp"
	svchost "github.com/hashicorp/terraform-svchost"

	"github.com/tfisolate/tfisolate/cliconfig"
)

// Registry returns a Source speaking the provider registry protocol to the
// host named in each provider address: service discovery at
// https://HOST/.well-known/terraform.json ("providers.v1"), then the
// versions and download endpoints. Packages are accepted only if their
// SHA-256 is in a SHA256SUMS document signed by one of the registry's keys.
// A TF_TOKEN_<host> variable (dots as "_", hyphens as "__", as in Terraform),
// else the token of a credentials block of the CLI config given to
// WithCLIConfig, is sent as a bearer token to that host's registry API
// (wherever its discovery or a host block puts it, if that is https) and
// to downloads from https://host itself (same host and port), never over
// plain http. A redirect from https to http is refused, and a redirect
// to another scheme, host or port does not carry the token. A host block in that CLI config with a "providers.v1"
// service is used instead of service discovery, as Terraform uses it.
func Registry() Source { return &registry{bases: map[string]*url.URL{}} }

type registry struct {
	mu    sync.Mutex
	bases map[string]*url.URL // discovered providers.v1 base per host
}

// String names the protocol; the host comes from each provider address.
func (r *registry) String() string { return "provider registry" }

// token returns the credential for host, if any: its TF_TOKEN_ variable
// first (even an empty one), then a credentials block of the CLI config,
// in Terraform's order.
func token(env *fetchEnv, host string) string {
	h, err := svchost.ForComparison(host)
	if err != nil {
		return ""
	}
	name := "TF_TOKEN_" + strings.NewReplacer("-", "__", ".", "_").Replace(h.String())
	if v, ok := env.env(name); ok {
		return strings.TrimSpace(v)
	}
	return env.cli.tokens[h.String()]
}

// tokenFor returns the credential to send with a request to u: only
// https://host itself (the host the credential is for, its port
// included, 443 when it names none) gets it, never plain http on that
// host name, another port or a download host elsewhere.
func tokenFor(env *fetchEnv, host string, u *url.URL) string {
	if !sameOrigin(&url.URL{Scheme: "https", Host: host}, u) {
		return ""
	}
	return token(env, host)
}

func (r *registry) base(ctx context.Context, env *fetchEnv, p Provider) (*url.URL, error) {
	host, err := svchost.ForComparison(p.Hostname)
	if err != nil {
		return nil, fmt.Errorf("%w %q: bad hostname: %v", ErrInvalidProvider, p.String(), err)
	}
	_, forced := env.cli.hosts[host.String()]
	r.mu.Lock()
	b, ok := r.bases[p.Hostname]
	r.mu.Unlock()
	if ok && !forced {
		return b, nil
	}
	disco := &url.URL{Scheme: "https", Host: host.String(), Path: "/.well-known/terraform.json"}
	where := disco.String()
	doc := env.cli.hosts[host.String()]
	if forced {
		// A host block replaces discovery; its URLs are relative to the
		// discovery document's, as in Terraform.
		where = "the host " + strconv.Quote(p.Hostname) + " block of " + env.cli.path
	} else {
		body, err := env.getSmall(ctx, disco.String(), token(env, p.Hostname))
		if err != nil {
			return nil, fmt.Errorf("service discovery for %s: %w", p.Hostname, err)
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, fmt.Errorf("%w: service discovery %s: %v", ErrDownload, disco, err)
		}
	}
	raw, ok := doc["providers.v1"].(string)
	if !ok && forced {
		// Not "not found": the user's file says so, and Terraform would
		// fail the same way.
		return nil, &cliconfig.Error{Path: env.cli.path, Msg: fmt.Sprintf("the host %q block has no \"providers.v1\" service (a string), so the host offers no provider registry", p.Hostname)}
	}
	if !ok {
		return nil, fmt.Errorf("%w: host %s does not offer the provider registry protocol (no providers.v1 in %s)", ErrNotFound, p.Hostname, where)
	}
	b, err = disco.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: service discovery %s: providers.v1 %q: %v", ErrDownload, where, raw, err)
	}
	if !strings.HasSuffix(b.Path, "/") {
		b.Path += "/"
	}
	if forced {
		// Cheap to recompute, and the Registry may serve caches with
		// other CLI configs: only discovered bases are remembered.
		return b, nil
	}
	r.mu.Lock()
	r.bases[p.Hostname] = b
	r.mu.Unlock()
	return b, nil
}

// Versions lists the versions the registry offers for p.
func (r *registry) Versions(ctx context.Context, p Provider) ([]string, error) {
	env := envFrom(ctx)
	b, err := r.base(ctx, env, p)
	if err != nil {
		return nil, err
	}
	// The registry's API gets the host's credentials wherever its base
	// is, as Terraform sends them.
	u := b.JoinPath(p.Namespace, p.Type, "versions")
	body, err := env.getSmall(ctx, u.String(), token(env, p.Hostname))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Versions []struct {
			Version string `json:"version"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDownload, u, err)
	}
	out := make([]string, 0, len(doc.Versions))
	for _, d := range doc.Versions {
		out = append(out, d.Version)
	}
	return out, nil
}

type downloadDoc struct {
	Filename            string `json:"filename"`
	DownloadURL         string `json:"download_url"`
	SHASumsURL          string `json:"shasums_url"`
	SHASumsSignatureURL string `json:"shasums_signature_url"`
	SHASum              string `json:"shasum"`
	SigningKeys         struct {
		GPGPublicKeys []struct {
			KeyID      string `json:"key_id"`
			ASCIIArmor string `json:"ascii_armor"`
		} `json:"gpg_public_keys"`
	} `json:"signing_keys"`
}

// Fetch downloads the package and checks it against the registry's
// signed SHA256SUMS.
func (r *registry) Fetch(ctx context.Context, id PackageID, dst *os.File) (Fetched, error) {
	env, p := envFrom(ctx), id.Provider
	b, err := r.base(ctx, env, p)
	if err != nil {
		return Fetched{}, err
	}
	osName, arch, _ := strings.Cut(id.Platform, "_")
	u := b.JoinPath(p.Namespace, p.Type, id.Version, "download", osName, arch)
	body, err := env.getSmall(ctx, u.String(), token(env, p.Hostname))
	if err != nil {
		return Fetched{URL: u.String()}, err
	}
	var d downloadDoc
	if err := json.Unmarshal(body, &d); err != nil {
		return Fetched{URL: u.String()}, fmt.Errorf("%w: %s: %v", ErrDownload, u, err)
	}
	resolve := func(what, raw string) (*url.URL, error) {
		if raw == "" {
			return nil, fmt.Errorf("%w: %s: response has no %s", ErrDownload, u, what)
		}
		x, err := u.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %s %q: %v", ErrDownload, u, what, raw, err)
		}
		return x, nil
	}
	dl, err := resolve("download_url", d.DownloadURL)
	if err != nil {
		return Fetched{URL: u.String()}, err
	}
	sumsURL, err := resolve("shasums_url", d.SHASumsURL)
	if err != nil {
		return Fetched{URL: u.String()}, err
	}
	sigURL, err := resolve("shasums_signature_url", d.SHASumsSignatureURL)
	if err != nil {
		return Fetched{URL: u.String()}, err
	}
	if d.Filename == "" || strings.ContainsAny(d.Filename, "/\\") {
		return Fetched{URL: u.String()}, fmt.Errorf("%w: %s: bad filename %q", ErrDownload, u, d.Filename)
	}

	// Authenticate the checksums before spending bandwidth on the package.
	sums, err := env.getSmall(ctx, sumsURL.String(), tokenFor(env, p.Hostname, sumsURL))
	if err != nil {
		return Fetched{URL: sumsURL.String()}, err
	}
	sig, err := env.getSmall(ctx, sigURL.String(), tokenFor(env, p.Hostname, sigURL))
	if err != nil {
		return Fetched{URL: sigURL.String()}, err
	}
	if err := checkSignature(sums, sig, d); err != nil {
		return Fetched{URL: sigURL.String()}, err
	}
	want, zh, err := parseSums(sums, d.Filename, p.Type, id.Version)
	if err != nil {
		return Fetched{URL: sumsURL.String()}, err
	}
	if !strings.EqualFold(want, d.SHASum) {
		return Fetched{URL: sumsURL.String()}, fmt.Errorf("%w: registry says shasum %s for %s but the signed SHA256SUMS says %s", ErrChecksum, d.SHASum, d.Filename, want)
	}
	n, got, err := env.download(ctx, dl.String(), tokenFor(env, p.Hostname, dl), dst)
	if err != nil {
		return Fetched{URL: dl.String(), Bytes: n}, err
	}
	if !strings.EqualFold(got, want) {
		return Fetched{URL: dl.String(), Bytes: n}, fmt.Errorf("%w: %s has SHA-256 %s, the signed SHA256SUMS says %s", ErrChecksum, d.Filename, got, want)
	}
	return Fetched{URL: dl.String(), Bytes: n, SHA256: got, LockHashes: zh}, nil
}

// checkSignature verifies the detached OpenPGP signature of the SHA256SUMS
// document against the keys the registry listed for the package.
func checkSignature(sums, sig []byte, d downloadDoc) error {
	var ring openpgp.EntityList
	for _, k := range d.SigningKeys.GPGPublicKeys {
		es, err := openpgp.ReadArmoredKeyRing(strings.NewReader(k.ASCIIArmor))
		if err != nil {
			return fmt.Errorf("%w: signing key %s: %v", ErrSignature, k.KeyID, err)
		}
		ring = append(ring, es...)
	}
	if len(ring) == 0 {
		return fmt.Errorf("%w: the registry lists no signing keys", ErrSignature)
	}
	if _, err := openpgp.CheckDetachedSignature(ring, bytes.NewReader(sums), bytes.NewReader(sig), nil); err != nil {
		return fmt.Errorf("%w: SHA256SUMS: %v", ErrSignature, err)
	}
	return nil
}

// parseSums returns the SHA-256 listed for filename and the zh: hashes of
// every package of this provider version in the document, which is what
// makes a lock file valid on every platform.
func parseSums(doc []byte, filename, typ, ver string) (string, []string, error) {
	prefix := "terraform-provider-" + typ + "_" + ver + "_"
	var want string
	var zh []string
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || len(f[0]) != 64 {
			continue
		}
		sum, name := strings.ToLower(f[0]), strings.TrimPrefix(f[1], "*")
		if name == filename {
			want = sum
		}
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, ".zip") {
			zh = append(zh, "zh:"+sum)
		}
	}
	if want == "" {
		return "", nil, fmt.Errorf("%w: SHA256SUMS lists no checksum for %s", ErrChecksum, filename)
	}
	return want, zh, nil
}
