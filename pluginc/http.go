package pluginc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	svchost "github.com/hashicorp/terraform-svchost"
)

// fetchEnv is what sources need from the Cache: the HTTP client and the
// limits every request runs under.
type fetchEnv struct {
	client  *http.Client
	log     *slog.Logger
	env     func(string) (string, bool)
	cli     cliClient // the user's CLI config: tokens and host services
	lim     netLimits
	retries *atomic.Int64 // Stats.Retries

	// testHookWriter, when set, wraps every writer a download or an
	// unpack writes through, so tests can make writes fail (ENOSPC).
	testHookWriter func(io.Writer) io.Writer
}

// envKey is the context key under which a Cache hands its fetchEnv to
// the built-in sources, which implement the public Source interface like
// any caller's and so get nothing else from the cache.
type envKey struct{}

// withEnv returns ctx carrying env for the built-in sources.
func withEnv(ctx context.Context, env *fetchEnv) context.Context {
	return context.WithValue(ctx, envKey{}, env)
}

// envFrom returns the fetchEnv of the Cache that ctx comes from, or one
// with the default client and limits for a built-in source used on its
// own (or inside a caller's Source that started a context of its own).
func envFrom(ctx context.Context) *fetchEnv {
	if e, ok := ctx.Value(envKey{}).(*fetchEnv); ok {
		return e
	}
	cfg := defaultConfig()
	return &fetchEnv{client: withSafeRedirects(http.DefaultClient), log: slog.New(slog.DiscardHandler),
		env: os.LookupEnv, lim: cfg.net, retries: new(atomic.Int64)}
}

func (e *fetchEnv) writer(w io.Writer) io.Writer {
	if e != nil && e.testHookWriter != nil {
		return e.testHookWriter(w)
	}
	return w
}

// getSmall fetches a small document (JSON, SHA256SUMS, signatures). A
// response over the document limit is an error, never silently cut.
func (e *fetchEnv) getSmall(ctx context.Context, url, token string) ([]byte, error) {
	return e.getDocument(ctx, url, token, true)
}

// getFilledDocument fetches a small document that the server may only
// have once it has downloaded a package itself: a network mirror's
// VERSION.json, whose hashes a mirror in front of a cache (this
// package's MirrorHandler, an artifact store's remote repository) knows
// only after it fetched the package upstream. The document limit, the
// connect and header timeouts and the request timeout hold; the
// metadata timeout does not, since the answer takes as long as that
// upstream download.
func (e *fetchEnv) getFilledDocument(ctx context.Context, url, token string) ([]byte, error) {
	return e.getDocument(ctx, url, token, false)
}

// getDocument fetches a document of at most the document limit; small
// puts each attempt under the metadata timeout.
func (e *fetchEnv) getDocument(ctx context.Context, url, token string, small bool) ([]byte, error) {
	var b []byte
	err := e.get(ctx, url, token, small, func(body io.Reader, _ int64) error {
		var err error
		b, err = io.ReadAll(io.LimitReader(body, e.lim.maxDoc+1))
		if err != nil {
			return fmt.Errorf("%w: GET %s: read body: %w", ErrDownload, url, err)
		}
		if int64(len(b)) > e.lim.maxDoc {
			return fmt.Errorf("%w: response from %s exceeds %d bytes", ErrDownload, url, e.lim.maxDoc)
		}
		return nil
	})
	return b, err
}

// download streams url into dst and returns the byte count and the zip's
// SHA-256 in hex. A body shorter than its Content-Length is an error; a
// retried download starts dst over.
func (e *fetchEnv) download(ctx context.Context, url, token string, dst *os.File) (int64, string, error) {
	var n int64
	var sum string
	err := e.get(ctx, url, token, false, func(body io.Reader, length int64) error {
		if err := dst.Truncate(0); err != nil {
			return err
		}
		if _, err := dst.Seek(0, io.SeekStart); err != nil {
			return err
		}
		var err error
		n, sum, err = copyHashed(ctx, url, e.writer(dst), body, length)
		return err
	})
	return n, sum, err
}

// copyHashed copies src to dst and returns the byte count and the hex
// SHA-256 of what it copied. A failed write (a full disk) is reported as
// what it is, never as a truncated body.
func copyHashed(ctx context.Context, url string, dst io.Writer, src io.Reader, want int64) (int64, string, error) {
	h := sha256.New()
	w := &writeRecorder{w: io.MultiWriter(dst, h)}
	n, err := io.Copy(w, src)
	if w.err != nil {
		return n, "", fmt.Errorf("save %s: %w", url, w.err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return n, "", ctx.Err()
		}
		if errors.Is(err, ErrTimeout) {
			return n, "", fmt.Errorf("%w: GET %s: %w", ErrDownload, url, err)
		}
		return n, "", fmt.Errorf("%w: %s: body cut short after %d bytes: %w", ErrDownload, url, n, err)
	}
	if want >= 0 && n != want {
		return n, "", fmt.Errorf("%w: %s: body truncated: got %d of %d bytes", ErrDownload, url, n, want)
	}
	return n, hexSum(h), nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// writeRecorder remembers the first write error, so a copy can tell a
// failed write from a failed read.
type writeRecorder struct {
	w   io.Writer
	err error
}

func (r *writeRecorder) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// get performs GET url and hands a 200 response's body (and its announced
// length, -1 if unknown) to consume. Every attempt runs under the connect,
// header and body-idle timeouts, and a small document's attempt (small)
// also under the metadata timeout from start to end of body; connection
// errors, timeouts, bodies cut short, 429 and 5xx (but 501) are retried
// with backoff, honouring Retry-After. The whole request, retries and
// waits included, is bounded by the request timeout: no attempt starts
// or waits for headers past it, and a small document's body is cut by
// it too; only a package body that keeps arriving (bounded by the idle
// timeout) may run past it, so a slow but healthy download of a large
// provider is never killed. consume may be called once per attempt and
// must start over each time. Errors name the URL and wrap ErrDownload
// (ErrNotFound for a 404), and ErrTimeout when a timeout was the cause;
// after more than one attempt, or when the request timeout ran out, the
// error is a *RequestError saying how many attempts over how long.
func (e *fetchEnv) get(ctx context.Context, url, token string, small bool, consume func(body io.Reader, length int64) error) error {
	start := time.Now()
	deadline := start.Add(e.lim.request)
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		resp, body, err := e.attempt(ctx, url, token, deadline, small)
		var retry bool
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var te *timeoutError
			if errors.As(err, &te) && te.spent {
				return e.gaveUp(url, attempt+1, start, fmt.Errorf("%w: GET %s: %w", ErrDownload, url, err), true)
			}
			retry, _ = retryablehttp.DefaultRetryPolicy(ctx, nil, err)
			if errors.Is(err, errInsecureRedirect) {
				retry = false
			}
			err = fmt.Errorf("%w: GET %s: %w", ErrDownload, url, err)
		case resp.StatusCode != http.StatusOK:
			retry, _ = retryablehttp.DefaultRetryPolicy(ctx, resp, nil)
			err = statusError(url, resp)
			body.Close()
		default:
			err = consume(body, resp.ContentLength)
			body.Close()
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Only a transfer that broke off is worth another try; a
			// failed write or a response over a limit is not.
			if body.readErr == nil {
				return err
			}
			var te *timeoutError
			if errors.As(body.readErr, &te) && te.spent {
				return e.gaveUp(url, attempt+1, start, err, true)
			}
			retry = true
		}
		if !retry || attempt >= e.lim.retries {
			return e.gaveUp(url, attempt+1, start, err, false)
		}
		wait := retryablehttp.DefaultBackoff(e.lim.waitMin, e.lim.waitMax, attempt, resp)
		if wait > e.lim.waitMax {
			// Only Retry-After goes past the cap: the server wants more
			// patience than we were given.
			return fmt.Errorf("%w (the server asks to retry after %s, longer than the retry wait limit %s)", err, wait, e.lim.waitMax)
		}
		if !time.Now().Add(wait).Before(deadline) {
			// Waiting would spend what is left of the request's time
			// before the next attempt could even start.
			return e.gaveUp(url, attempt+1, start, err, true)
		}
		e.retries.Add(1)
		e.log.Info("retrying request", "url", url, "attempt", attempt+2, "wait", wait, "error", err.Error())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// gaveUp returns err, the last attempt's error, as the request's: in a
// *RequestError when there was more than one attempt or the request
// timeout ran out (spent), so the caller learns how long and how often
// the cache tried.
func (e *fetchEnv) gaveUp(url string, attempts int, start time.Time, err error, spent bool) error {
	if attempts == 1 && !spent {
		return err
	}
	re := &RequestError{URL: url, Attempts: attempts, Elapsed: time.Since(start), Err: err}
	if spent {
		re.Timeout = e.lim.request
	}
	return re
}

// statusError describes a non-200 response. It reads a little of the body
// for the message and leaves closing it to the caller.
func statusError(url string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	msg := strings.TrimSpace(string(b))
	if msg != "" {
		msg = ": " + oneLine(msg)
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: GET %s: %s%s", ErrNotFound, url, resp.Status, msg)
	}
	return fmt.Errorf("%w: GET %s: %s%s", ErrDownload, url, resp.Status, msg)
}

// attempt sends one GET under a watchdog that also ends it at deadline
// (the request's bound), or, for a small document, at the metadata
// timeout if that comes first. On success the caller must close the
// returned body, which also releases the watchdog.
func (e *fetchEnv) attempt(ctx context.Context, url, token string, deadline time.Time, small bool) (*http.Response, *watchedBody, error) {
	actx, cancel := context.WithCancelCause(ctx)
	end := hardEnd{at: deadline, spent: true, body: small,
		msg: fmt.Sprintf("the request timeout %s is spent", e.lim.request)}
	if meta := time.Now().Add(e.lim.meta); small && meta.Before(deadline) {
		end = hardEnd{at: meta, body: true,
			msg: fmt.Sprintf("no complete response within the metadata timeout %s", e.lim.meta)}
	}
	w := newWatchdog(e.lim, end, cancel)
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{
		GetConn: func(string) { w.phase(phaseConnect) },
		GotConn: func(httptrace.GotConnInfo) { w.phase(phaseHeaders) },
	})
	req, err := http.NewRequestWithContext(actx, http.MethodGet, url, nil)
	if err != nil {
		w.stop()
		return nil, nil, err
	}
	switch {
	case token == "":
	case req.URL.Scheme == "https":
		req.Header.Set("Authorization", "Bearer "+token)
	default:
		// A registry API that service discovery or a host block put on
		// plain http: the request goes, the credential does not.
		e.log.Warn("not sending credentials over plain http", "url", url)
	}
	req.Header.Set("User-Agent", "tfisolate-pluginc")
	resp, err := e.client.Do(req)
	if err != nil {
		cause := context.Cause(actx)
		w.stop()
		var te *timeoutError
		if errors.As(cause, &te) {
			return nil, nil, cause
		}
		return nil, nil, err
	}
	if cause := context.Cause(actx); cause != nil {
		// Cut before Do returned: Go's transport may still hand over a
		// response that came after the cut, such as the empty one a
		// server sends when its handler sees the client leave. It is
		// not the server's answer.
		resp.Body.Close()
		w.stop()
		return nil, nil, cause
	}
	w.phase(phaseBody)
	return resp, &watchedBody{rc: resp.Body, w: w, actx: actx}, nil
}

// errInsecureRedirect is the cause of a refused redirect from https to
// plain http; such a request is not retried.
var errInsecureRedirect = errors.New("redirect from https to http refused")

// withSafeRedirects returns a shallow copy of hc whose redirect policy is
// safeRedirect over hc's own, so the caller's client is never changed.
func withSafeRedirects(hc *http.Client) *http.Client {
	c := *hc
	c.CheckRedirect = safeRedirect(hc.CheckRedirect)
	return &c
}

// safeRedirect is the cache's redirect policy: a redirect from https to
// anything else is refused (errInsecureRedirect), and the Authorization
// header the cache set goes only to the scheme, host and port it was set
// for (Go's client keeps it for the same host name on any port and
// scheme). Then next decides, or Go's default limit of 10 redirects.
func safeRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != "https" {
			for _, v := range via {
				if v.URL.Scheme == "https" {
					return fmt.Errorf("%w: %s to %s", errInsecureRedirect, v.URL.Redacted(), req.URL.Redacted())
				}
			}
		}
		if len(via) > 0 && !sameOrigin(via[0].URL, req.URL) {
			req.Header.Del("Authorization")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// sameOrigin reports whether a and b have the same scheme, host (in
// Terraform's comparison form) and port (the scheme's default when
// absent).
func sameOrigin(a, b *url.URL) bool {
	if !strings.EqualFold(a.Scheme, b.Scheme) {
		return false
	}
	ha, pa := hostPort(a)
	hb, pb := hostPort(b)
	return ha != "" && ha == hb && pa == pb
}

// hostPort returns u's host in comparison form and its port, the
// scheme's default port when u names none.
func hostPort(u *url.URL) (string, string) {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[strings.ToLower(u.Scheme)]
	}
	h, err := svchost.ForComparison(u.Hostname())
	if err != nil {
		return "", ""
	}
	return h.String(), port
}

// timeoutError says which timeout expired; spent marks the request
// timeout, after which no attempt follows.
type timeoutError struct {
	msg   string
	spent bool
}

func (e *timeoutError) Error() string { return e.msg }
func (e *timeoutError) Unwrap() error { return ErrTimeout }

type phase int

const (
	phaseStart   phase = iota // before the transport asks for a connection
	phaseConnect              // dialing and handshaking
	phaseHeaders              // waiting for the response headers
	phaseBody                 // reading the body
	phaseDone
)

// hardEnd is a time an attempt must end by whatever its progress: the
// request's bound or a small document's metadata timeout. body says
// whether it also cuts the response body; spent, that it is the
// request's bound.
type hardEnd struct {
	at    time.Time
	msg   string
	body  bool
	spent bool
}

// watchdog cancels an attempt whose current phase makes no progress in
// time, or that reaches its hard end. It works whatever http.Client the
// caller gave us: a client with no timeouts of its own still cannot hang
// the cache.
type watchdog struct {
	lim    netLimits
	end    hardEnd
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	t        *time.Timer
	ph       phase
	deadline time.Time // of the start, connect and headers phases
	last     time.Time // last body progress
	n        int64     // body bytes so far
}

func newWatchdog(lim netLimits, end hardEnd, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{lim: lim, end: end, cancel: cancel, ph: phaseStart}
	// A transport that reports no trace events is still bounded: by both
	// timeouts together until the headers arrive.
	now := time.Now()
	w.mu.Lock()
	w.deadline = now.Add(lim.connect + lim.header)
	d, _ := w.due()
	w.t = time.AfterFunc(d.Sub(now), w.check)
	w.mu.Unlock()
	return w
}

// due returns when the current phase must end, and whether that is the
// hard end. The caller holds mu.
func (w *watchdog) due() (time.Time, bool) {
	due := w.deadline
	if w.ph == phaseBody {
		due = w.last.Add(w.lim.idle)
		if !w.end.body {
			return due, false
		}
	}
	if w.end.at.Before(due) {
		return w.end.at, true
	}
	return due, false
}

// phase moves the watchdog to p and restarts its clock.
func (w *watchdog) phase(p phase) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ph == phaseDone {
		return
	}
	w.ph = p
	now := time.Now()
	var d time.Duration
	switch p {
	case phaseConnect:
		d = w.lim.connect
	case phaseHeaders:
		d = w.lim.header
	case phaseBody:
		d = w.lim.idle
		w.last = now
	}
	w.deadline = now.Add(d)
	due, _ := w.due()
	w.t.Reset(due.Sub(now))
}

// progress records n body bytes read.
func (w *watchdog) progress(n int) {
	w.mu.Lock()
	w.n += int64(n)
	w.last = time.Now()
	w.mu.Unlock()
}

// check runs when the timer fires: it cancels the attempt if the phase's
// time is up, or sleeps until it might be (progress moved the goalpost).
func (w *watchdog) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ph == phaseDone {
		return
	}
	now := time.Now()
	due, hard := w.due()
	if now.Before(due) {
		w.t.Reset(due.Sub(now))
		return
	}
	var msg string
	switch {
	case hard:
		msg = w.end.msg
	case w.ph == phaseStart:
		msg = fmt.Sprintf("no response headers within %s", w.lim.connect+w.lim.header)
	case w.ph == phaseConnect:
		msg = fmt.Sprintf("no connection within the connect timeout %s", w.lim.connect)
	case w.ph == phaseHeaders:
		msg = fmt.Sprintf("no response headers within the header timeout %s", w.lim.header)
	case w.ph == phaseBody:
		msg = fmt.Sprintf("body stalled: no data for the idle timeout %s after %d bytes", w.lim.idle, w.n)
	}
	w.ph = phaseDone
	w.cancel(&timeoutError{msg: msg, spent: hard && w.end.spent})
}

// stop ends the watchdog and releases the attempt's context.
func (w *watchdog) stop() {
	w.mu.Lock()
	w.ph = phaseDone
	w.t.Stop()
	w.mu.Unlock()
	w.cancel(context.Canceled)
}

// watchedBody feeds the watchdog and remembers why a read failed.
type watchedBody struct {
	rc      io.ReadCloser
	w       *watchdog
	actx    context.Context
	readErr error
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.progress(n)
	}
	if err != nil && err != io.EOF {
		var te *timeoutError
		if cause := context.Cause(b.actx); errors.As(cause, &te) {
			err = cause
		}
		b.readErr = err
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.rc.Close()
	b.w.stop()
	return err
}
