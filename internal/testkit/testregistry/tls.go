package testregistry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"time"
)

// certs is a CA and a leaf certificate for the server's host name.
type certs struct {
	caPEM []byte
	leaf  tls.Certificate
}

func newCerts(host string) (*certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tfisolate test registry CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host, "localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	return &certs{
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		leaf:  tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key},
	}, nil
}

// NewClient returns an HTTP client that trusts caPEM and sends every
// connection for host to addr (a loopback "ip:port"), refusing any other
// host, so nothing a test does can leave the machine. Child processes use
// it with the address and CA file their parent passes them.
func NewClient(host, addr string, caPEM []byte) (*http.Client, error) {
	return newClient(host, func(string) string { return addr }, caPEM)
}

// newClient is NewClient with the loopback address chosen per dialed
// "host:port" by route.
func newClient(host string, route func(string) string, caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("testregistry: no certificate in CA PEM")
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			h, _, err := net.SplitHostPort(a)
			if err != nil {
				return nil, err
			}
			if h != host && h != "127.0.0.1" && h != "localhost" {
				return nil, fmt.Errorf("testregistry: refusing to dial %s: only %s is served", a, host)
			}
			return d.DialContext(ctx, network, route(a))
		},
	}
	return &http.Client{Transport: tr}, nil
}

// CAPEM returns the PEM of the CA that issued the server's certificate.
func (s *Server) CAPEM() []byte { return append([]byte(nil), s.certs.caPEM...) }

// WriteCAFile writes the CA certificate to path (for SSL_CERT_FILE or a
// child process).
func (s *Server) WriteCAFile(path string) error {
	if err := os.WriteFile(path, s.certs.caPEM, 0o644); err != nil {
		return fmt.Errorf("testregistry: write CA file: %w", err)
	}
	return nil
}

// HTTPClient returns a client that trusts the server and reaches it under
// its host name.
func (s *Server) HTTPClient() *http.Client {
	c, err := newClient(s.host, s.dialAddr, s.certs.caPEM)
	if err != nil {
		panic(err) // the PEM is our own; this cannot fail
	}
	return c
}

// HTTPClientAlso is HTTPClient that also reaches each of others (TLS
// test servers, such as a provider mirror in front of this registry) at
// its own loopback address, trusting its certificate: a cache with a
// mirror and this registry as its sources uses one client for both. A
// server already closed is dialed all the same, and refuses, as a
// mirror that is down does.
func (s *Server) HTTPClientAlso(others ...*httptest.Server) *http.Client {
	direct := map[string]bool{}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.certs.caPEM)
	for _, o := range others {
		direct[o.Listener.Addr().String()] = true
		if c := o.Certificate(); c != nil {
			pool.AddCert(c)
		}
	}
	c, err := newClient(s.host, func(a string) string {
		if direct[a] {
			return a
		}
		return s.dialAddr(a)
	}, s.certs.caPEM)
	if err != nil {
		panic(err) // the PEM is our own; this cannot fail
	}
	c.Transport.(*http.Transport).TLSClientConfig.RootCAs = pool
	return c
}
