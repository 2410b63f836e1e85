package testregistry

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Gate holds package downloads mid-body: a held download sends the first
// half of the package, then waits until Release (or until its client goes
// away). It makes "killed while downloading" deterministic.
type Gate struct {
	started   chan struct{}
	startOnce sync.Once
	release   chan struct{}
	relOnce   sync.Once
}

// Hold makes every later package download wait at the returned gate.
func (s *Server) Hold() *Gate {
	g := &Gate{started: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	old := s.gate
	s.gate = g
	s.mu.Unlock()
	if old != nil {
		old.Release()
	}
	return g
}

// Started is closed once a download has sent its first half and is held.
func (g *Gate) Started() <-chan struct{} { return g.started }

// Release lets held and later downloads finish. It is idempotent.
func (g *Gate) Release() { g.relOnce.Do(func() { close(g.release) }) }

func (s *Server) serveZip(w http.ResponseWriter, r *http.Request, p Package) {
	if r.Method == http.MethodHead {
		// Terraform probes with HEAD before it downloads: not a download.
		w.Header().Set("Content-Type", "application/zip")
		w.Header().Set("Content-Length", strconv.Itoa(len(p.Zip)))
		return
	}
	s.mu.Lock()
	s.downloads[p.Key()]++
	s.mu.Unlock()
	f, g := s.state()
	switch f {
	case FaultStatus500:
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	case FaultTooManyRequestsOnce, FaultUnavailableOnce:
		if s.takeOnce(f) {
			code := http.StatusServiceUnavailable
			if f == FaultTooManyRequestsOnce {
				code = http.StatusTooManyRequests
				w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
			}
			http.Error(w, "injected "+http.StatusText(code), code)
			return
		}
		f = FaultNone
	case FaultStallHeaders:
		s.stall(r)
		return
	}
	body := p.Zip
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if f == FaultTruncated {
		// Announce the full length, send half, and hang up: the client
		// sees an unexpected EOF.
		body = body[:len(body)/2]
	}
	half := len(p.Zip) / 2
	if g != nil && half > len(body) {
		half = len(body)
	}
	sent := 0
	if g != nil {
		if !s.send(w, r, body[:half]) {
			return
		}
		sent = half
		g.startOnce.Do(func() { close(g.started) })
		select {
		case <-g.release:
		case <-r.Context().Done():
			return
		}
	}
	if f == FaultStallBody {
		if s.send(w, r, body[sent:len(body)/2]) {
			s.stall(r)
		}
		return
	}
	s.send(w, r, body[sent:])
	if f == FaultTruncated {
		// Abort the response; net/http closes the connection (or resets
		// the HTTP/2 stream) without logging.
		panic(http.ErrAbortHandler)
	}
}

// stall waits until the client goes away or the server closes.
func (s *Server) stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closed:
	}
}

// send writes b at the throttled rate, flushing as it goes. It reports
// false if the client went away.
func (s *Server) send(w http.ResponseWriter, r *http.Request, b []byte) bool {
	rc := http.NewResponseController(w)
	start := time.Now()
	written := 0
	for written < len(b) {
		rate := s.throttle.Load()
		chunk := 64 << 10
		if rate > 0 && int64(chunk) > rate/50 {
			chunk = max(int(rate/50), 1024)
		}
		end := min(written+chunk, len(b))
		if _, err := w.Write(b[written:end]); err != nil {
			return false
		}
		written = end
		_ = rc.Flush()
		if rate > 0 {
			due := start.Add(time.Duration(float64(written) / float64(rate) * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-r.Context().Done():
					t.Stop()
					return false
				}
			}
		}
	}
	return true
}
