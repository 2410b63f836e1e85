package testregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/stretchr/testify/require"
)

func get(t *testing.T, c *http.Client, url string) (int, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func TestRegistryProtocol(t *testing.T) {
	s := Start(t)
	zip := []byte("PK not really a zip")
	s.MustAdd(t, Package{Namespace: "ns", Type: "t", Version: "1.0.0", Platform: "linux_amd64", Zip: zip})
	s.MustAdd(t, Package{Namespace: "ns", Type: "t", Version: "1.0.0", Platform: "darwin_arm64", Zip: []byte("other")})
	c := s.HTTPClient()

	code, b := get(t, c, s.URL()+"/.well-known/terraform.json")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"providers.v1":"/v1/providers/","modules.v1":"/v1/modules/"}`, string(b))

	code, b = get(t, c, s.URL()+"/v1/providers/ns/t/versions")
	require.Equal(t, 200, code)
	require.Contains(t, string(b), `"version":"1.0.0"`)

	code, b = get(t, c, s.URL()+"/v1/providers/ns/t/1.0.0/download/linux/amd64")
	require.Equal(t, 200, code)
	var d struct {
		DownloadURL, ShasumsURL, ShasumsSignatureURL, Shasum string
		Filename                                             string
		SigningKeys                                          struct {
			GPGPublicKeys []struct {
				ASCIIArmor string `json:"ascii_armor"`
			} `json:"gpg_public_keys"`
		} `json:"signing_keys"`
	}
	require.NoError(t, json.Unmarshal(b, &d))
	_, sums := get(t, c, s.URL()+"/dl/ns/t/1.0.0/SHA256SUMS")
	_, sig := get(t, c, s.URL()+"/dl/ns/t/1.0.0/SHA256SUMS.sig")
	require.Equal(t, sha256Hex([]byte("other"))+"  terraform-provider-t_1.0.0_darwin_arm64.zip\n"+
		sha256Hex(zip)+"  terraform-provider-t_1.0.0_linux_amd64.zip\n", string(sums))
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader([]byte(s.ArmoredPublicKey())))
	require.NoError(t, err)
	_, err = openpgp.CheckDetachedSignature(ring, bytes.NewReader(sums), bytes.NewReader(sig), nil)
	require.NoError(t, err)

	code, b = get(t, c, s.URL()+"/dl/ns/t/1.0.0/terraform-provider-t_1.0.0_linux_amd64.zip")
	require.Equal(t, 200, code)
	require.Equal(t, zip, b)
	require.Equal(t, 1, s.Downloads("ns/t/1.0.0/linux_amd64"))
	require.Equal(t, int64(6), s.Requests())

	// A second process would trust the CA from a file.
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, s.WriteCAFile(ca))
	pem, err := os.ReadFile(ca)
	require.NoError(t, err)
	c2, err := NewClient(s.Host(), s.Addr(), pem)
	require.NoError(t, err)
	code, _ = get(t, c2, s.MirrorURL()+s.Host()+"/ns/t/index.json")
	require.Equal(t, 200, code)
	_, err = c2.Get("https://example.invalid/")
	require.ErrorContains(t, err, "refusing to dial")
}

func TestToken(t *testing.T) {
	s := Start(t, WithToken("sekrit"))
	s.MustAdd(t, Package{Namespace: "ns", Type: "t", Version: "1.0.0", Platform: "linux_amd64", Zip: []byte("z")})
	code, _ := get(t, s.HTTPClient(), s.URL()+"/v1/providers/ns/t/versions")
	require.Equal(t, http.StatusUnauthorized, code)
	req, _ := http.NewRequest("GET", s.URL()+"/v1/providers/ns/t/versions", nil)
	req.Header.Set("Authorization", "Bearer sekrit")
	resp, err := s.HTTPClient().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}

func TestGateAndFaults(t *testing.T) {
	s := Start(t)
	zip := bytes.Repeat([]byte("x"), 1<<20)
	s.MustAdd(t, Package{Namespace: "ns", Type: "t", Version: "1.0.0", Platform: "linux_amd64", Zip: zip})
	url := s.URL() + "/dl/ns/t/1.0.0/terraform-provider-t_1.0.0_linux_amd64.zip"

	g := s.Hold()
	done := make(chan []byte)
	go func() {
		_, b := get(t, s.HTTPClient(), url)
		done <- b
	}()
	<-g.Started()
	select {
	case <-done:
		t.Fatal("held download finished before release")
	default:
	}
	g.Release()
	require.Equal(t, zip, <-done)

	s.SetFault(FaultStatus500)
	code, _ := get(t, s.HTTPClient(), url)
	require.Equal(t, 500, code)

	s.SetFault(FaultTruncated)
	resp, err := s.HTTPClient().Get(url)
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Error(t, err)
}

func TestNetworkFaults(t *testing.T) {
	s := Start(t)
	zip := bytes.Repeat([]byte("y"), 1<<20)
	s.MustAdd(t, Package{Namespace: "ns", Type: "t", Version: "1.0.0", Platform: "linux_amd64", Zip: zip})
	url := s.URL() + "/dl/ns/t/1.0.0/terraform-provider-t_1.0.0_linux_amd64.zip"
	c := s.HTTPClient()

	// Once-only faults answer one request, then the server behaves.
	s.SetFault(FaultTooManyRequestsOnce)
	resp, err := c.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	code, b := get(t, c, url)
	require.Equal(t, 200, code)
	require.Equal(t, zip, b)

	s.SetFault(FaultUnavailableOnce)
	resp, err = c.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Retry-After"))
	code, _ = get(t, c, url)
	require.Equal(t, 200, code)

	s.SetFault(FaultOversize)
	code, b = get(t, c, s.URL()+"/v1/providers/ns/t/1.0.0/download/linux/amd64")
	require.Equal(t, 200, code)
	require.Len(t, b, OversizeBytes)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc), "still valid JSON")

	// Stalls last until the client gives up.
	s.SetFault(FaultStallHeaders)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	errc := make(chan error)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitForDownloads(t, s, 5) // the stalled request has reached the handler
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	s.SetFault(FaultStallBody)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err = c.Do(req)
	require.NoError(t, err)
	half := make([]byte, len(zip)/2)
	_, err = io.ReadFull(resp.Body, half)
	require.NoError(t, err, "the first half arrives")
	go cancel()
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Error(t, err, "the rest never does")
}

// waitForDownloads waits until the server has counted n package requests.
func waitForDownloads(t *testing.T, s *Server, n int) {
	t.Helper()
	for s.TotalDownloads() < n {
		runtime.Gosched()
	}
}
