package pluginc

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// fast makes retries quick for tests; the timeouts keep their defaults,
// so a loaded machine cannot make a healthy request time out.
func fast(retries int) []Option {
	return []Option{WithRetries(retries), WithRetryWait(time.Millisecond, 5*time.Second)}
}

func slogNew(h slog.Handler) *slog.Logger { return slog.New(h) }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// logRecorder is a slog handler keeping every record's message and attributes.
type logRecorder struct {
	mu   sync.Mutex
	recs []map[string]string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	l.mu.Lock()
	l.recs = append(l.recs, m)
	l.mu.Unlock()
	return nil
}

func (l *logRecorder) find(msg string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.recs {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestStalledServer: a server that stops answering (before the headers or
// halfway through the body) cannot hang Ensure, even with a caller's
// client that has no timeouts and a context without a deadline: each
// attempt is cut by the cache's own watchdog, retried, and the error says
// what timed out and where.
func TestStalledServer(t *testing.T) {
	for _, tc := range []struct {
		fault testregistry.Fault
		want  string
	}{
		{testregistry.FaultStallHeaders, "no response headers within the header timeout 500ms"},
		{testregistry.FaultStallBody, "body stalled: no data for the idle timeout 500ms after"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			f := startRegistry(t, 0, []string{"1.0.0"})
			f.srv.SetFault(tc.fault)
			hc := f.srv.HTTPClient()
			require.Zero(t, hc.Timeout, "the caller's client has no timeout of its own")
			c := f.open(t, t.TempDir(), append(fast(1), WithHeaderTimeout(500*time.Millisecond), WithBodyIdleTimeout(500*time.Millisecond))...)
			_, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
			require.ErrorIs(t, err, ErrTimeout)
			require.ErrorIs(t, err, ErrDownload)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "gave up after 2 attempts")
			var ie *InstallError
			require.ErrorAs(t, err, &ie)
			require.True(t, strings.HasSuffix(ie.URL, ".zip"), ie.URL)
			require.ErrorContains(t, err, "GET "+ie.URL)
			require.Equal(t, 2, f.srv.Downloads(f.key("1.0.0")), "one retry")
			require.GreaterOrEqual(t, c.Stats().Retries, int64(1))
			requireEmptyCache(t, c)

			f.srv.SetFault(testregistry.FaultNone)
			_, err = c.Ensure(context.Background(), Requirement{Provider: f.p})
			require.NoError(t, err)
		})
	}
}

// TestRequestTimeout: the request timeout bounds a whole request,
// retries and waits included (issue 17 item 4). A mirror that accepts
// connections and then never answers, asked with more retries than the
// bound allows, ends with a *RequestError that says how many attempts
// over how long and that the request timeout is spent; so does a package
// download whose headers never come. A package body that is arriving is
// not cut by it: a download held mid-body for twice the bound still
// completes, in one attempt.
func TestRequestTimeout(t *testing.T) {
	const bound = 2 * time.Second
	// A safety net only: the request timeout must end every request
	// first, which each subtest checks.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	many := []Option{WithRequestTimeout(bound), WithRetries(1000), WithRetryWait(time.Millisecond, 10*time.Millisecond)}
	requireSpent := func(t *testing.T, err error) *RequestError {
		t.Helper()
		require.NoError(t, ctx.Err(), "the request timeout, not the test's safety net, ended the request")
		require.ErrorIs(t, err, ErrTimeout)
		require.ErrorIs(t, err, ErrDownload)
		var re *RequestError
		require.ErrorAs(t, err, &re)
		require.Equal(t, bound, re.Timeout)
		require.Greater(t, re.Attempts, 1, "retried until the bound")
		require.Positive(t, re.Elapsed)
		require.ErrorContains(t, err, fmt.Sprintf("(gave up after %d attempts in %s: the request timeout 2s is spent)", re.Attempts, re.Elapsed.Round(time.Millisecond)))
		return re
	}

	t.Run("stalled mirror", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select { // never answers while the test runs
			case <-release:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) }) // before srv.Close, which waits for handlers
		c, err := Open(t.TempDir(), append(many, WithSource(NetworkMirror(srv.URL+"/")), WithHTTPClient(srv.Client()),
			WithMetadataTimeout(100*time.Millisecond))...)
		require.NoError(t, err)
		p := testProvider(t)
		_, err = c.Ensure(ctx, Requirement{Provider: p})
		re := requireSpent(t, err)
		require.Equal(t, srv.URL+"/"+p.Hostname+"/"+p.Namespace+"/"+p.Type+"/index.json", re.URL)
		require.Equal(t, int64(re.Attempts-1), c.Stats().Retries)
	})

	t.Run("stalled download", func(t *testing.T) {
		f := startRegistry(t, 0, []string{"1.0.0"})
		f.srv.SetFault(testregistry.FaultStallHeaders)
		c := f.open(t, t.TempDir(), append(many, WithHeaderTimeout(bound/4))...)
		_, err := c.Ensure(ctx, Requirement{Provider: f.p})
		re := requireSpent(t, err)
		require.True(t, strings.HasSuffix(re.URL, ".zip"), re.URL)
		require.Equal(t, re.Attempts, f.srv.Downloads(f.key("1.0.0")))
		requireEmptyCache(t, c)
	})

	t.Run("slow download is not cut", func(t *testing.T) {
		f := startRegistry(t, 0, []string{"1.0.0"})
		gate := f.srv.Hold()
		c := f.open(t, t.TempDir(), many...)
		errc := make(chan error, 1)
		go func() {
			_, err := c.Ensure(ctx, Requirement{Provider: f.p})
			errc <- err
		}()
		<-gate.Started()
		// Not a synchronisation: the body must be under way for longer
		// than the bound before it may go on.
		held := time.NewTimer(2 * bound)
		select {
		case <-held.C:
		case err := <-errc:
			t.Fatalf("the download ended while held mid-body: %v", err)
		}
		gate.Release()
		require.NoError(t, <-errc)
		require.Equal(t, 1, f.srv.Downloads(f.key("1.0.0")), "one attempt, never cut")
		require.Zero(t, c.Stats().Retries)
	})
}

// TestConnectTimeout: a server that accepts connections but never
// completes the TLS handshake is given up on after the connect timeout.
func TestConnectTimeout(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // never answered
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	hc, err := testregistry.NewClient(f.srv.Host(), ln.Addr().String(), f.srv.CAPEM())
	require.NoError(t, err)
	c, err := Open(t.TempDir(), WithSource(Registry()), WithHTTPClient(hc), WithConnectTimeout(100*time.Millisecond), WithRetries(0))
	require.NoError(t, err)
	_, err = c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorContains(t, err, "no connection within the connect timeout 100ms")
	require.ErrorContains(t, err, "GET https://"+f.srv.Host()+"/.well-known/terraform.json")
}

// TestRetryAfter: a 429 with Retry-After is retried after the time the
// server asked for (not the much shorter minimum backoff), and counted;
// a Retry-After longer than the retry wait limit fails at once, saying so.
func TestRetryAfter(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"})
	f.srv.SetFault(testregistry.FaultTooManyRequestsOnce)
	logs := &logRecorder{}
	c := f.open(t, t.TempDir(), append(fast(2), WithLogger(slog.New(logs)))...)
	_, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.NoError(t, err)
	require.Equal(t, int64(1), c.Stats().Retries)
	require.Equal(t, int64(1), c.Stats().Downloads)
	require.Equal(t, 2, f.srv.Downloads(f.key("1.0.0")))
	retries := logs.find("retrying request")
	require.Len(t, retries, 1)
	require.Equal(t, (testregistry.RetryAfterSeconds * time.Second).String(), retries[0]["wait"], "Retry-After honoured")
	require.Contains(t, retries[0]["error"], "429")
	require.True(t, strings.HasSuffix(retries[0]["url"], ".zip"), retries[0]["url"])

	f.srv.SetFault(testregistry.FaultTooManyRequestsOnce)
	c = f.open(t, t.TempDir(), WithRetryWait(time.Millisecond, 10*time.Millisecond))
	_, err = c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.ErrorIs(t, err, ErrDownload)
	require.ErrorContains(t, err, "429 Too Many Requests")
	require.ErrorContains(t, err, "the server asks to retry after 1s, longer than the retry wait limit 10ms")
	require.Zero(t, c.Stats().Retries)
	requireEmptyCache(t, c)
}

// TestRetryOnce: a single 503 costs a retry, not the install; with
// retries off it fails at once.
func TestRetryOnce(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"})
	f.srv.SetFault(testregistry.FaultUnavailableOnce)
	c := f.open(t, t.TempDir(), fast(DefaultRetries)...)
	_, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.NoError(t, err)
	require.Equal(t, int64(1), c.Stats().Retries)

	f.srv.SetFault(testregistry.FaultUnavailableOnce)
	c = f.open(t, t.TempDir(), WithRetries(0))
	_, err = c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.ErrorIs(t, err, ErrDownload)
	require.ErrorContains(t, err, "503 Service Unavailable")
	require.Zero(t, c.Stats().Retries)
}

// TestOversizeDocument: a document over the limit is an error saying so,
// not a JSON error about a silently cut body.
func TestOversizeDocument(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"})
	f.srv.SetFault(testregistry.FaultOversize)
	c := f.open(t, t.TempDir())
	_, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.ErrorIs(t, err, ErrDownload)
	var ie *InstallError
	require.ErrorAs(t, err, &ie)
	require.Contains(t, ie.URL, "/download/")
	require.ErrorContains(t, err, "response from "+ie.URL+" exceeds 8388608 bytes")
	require.Zero(t, c.Stats().Retries, "an oversize response is not retried")
}

// TestCanceledWhileStalled: the caller's context still ends a stalled
// request at once, with the context's error.
func TestCanceledWhileStalled(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"})
	f.srv.SetFault(testregistry.FaultStallHeaders)
	hc := f.srv.HTTPClient()
	sent := make(chan struct{}, 8)
	base := hc.Transport
	hc.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, ".zip") {
			sent <- struct{}{}
		}
		return base.RoundTrip(r)
	})
	c, err := Open(t.TempDir(), WithSource(Registry()), WithHTTPClient(hc))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := c.Ensure(ctx, Requirement{Provider: f.p})
		errc <- err
	}()
	<-sent
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	requireEmptyCache(t, c)
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		opt  Option
		name string
	}{
		{WithConnectTimeout(0), "WithConnectTimeout"},
		{WithHeaderTimeout(-time.Second), "WithHeaderTimeout"},
		{WithBodyIdleTimeout(0), "WithBodyIdleTimeout"},
		{WithMetadataTimeout(0), "WithMetadataTimeout"},
		{WithRequestTimeout(-time.Second), "WithRequestTimeout"},
		{WithRetries(-1), "WithRetries"},
		{WithRetryWait(0, time.Second), "WithRetryWait"},
		{WithRetryWait(time.Second, time.Millisecond), "WithRetryWait"},
		{WithMaxUnpackedSize(0), "WithMaxUnpackedSize"},
		{WithHTTPClient(nil), "WithHTTPClient"},
		{WithSource(nil), "WithSource"},
		{WithPlatforms("linux"), "WithPlatforms"},
		{nil, "option 0 is nil"},
	} {
		_, err := Open(t.TempDir(), tc.opt)
		require.ErrorContains(t, err, tc.name)
	}
	// nil logger and nil lookup mean the defaults, never an error.
	_, err := Open(t.TempDir(), WithLogger(nil), WithLookupEnv(nil))
	require.NoError(t, err)
}
