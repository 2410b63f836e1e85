package testbackend

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxStateBytes bounds a state or lock body the HTTP server accepts.
const maxStateBytes = 64 << 20

// LockInfo is terraform's state lock information, in the JSON form
// terraform sends with a LOCK request and expects back in a 423 answer.
type LockInfo struct {
	ID        string    // unique lock ID, what force-unlock takes
	Operation string    // e.g. "OperationTypeApply"
	Info      string    // extra information
	Who       string    // user@hostname of the holder
	Version   string    // terraform version of the holder
	Created   time.Time // when the lock was taken
	Path      string    // the state's path, if the backend sets one
}

// Counters are the requests the HTTP state server answered for one state.
type Counters struct {
	Faults int // requests answered by a fault (see Fail); not counted below

	Gets    int // GET (read state)
	Posts   int // POST (write state), refused ones included
	Deletes int // DELETE (remove state), refused ones included

	Locks         int // LOCK requests, refused ones included
	LockConflicts int // LOCK answered 423 because the state was locked

	Unlocks         int // UNLOCK requests, refused and forced ones included
	UnlockConflicts int // UNLOCK answered 409: its body named another lock ID
	ForcedUnlocks   int // UNLOCK with no body (what terraform force-unlock sends): released any lock

	WriteConflicts int // POST or DELETE answered 423: locked, and not with the ID they carried
}

// HTTPState is a loopback state server for terraform's http backend: one
// state and one lock per name under /state/NAME. Locks live in the server,
// so a lock taken by a terraform that was killed stays until someone
// unlocks it with its ID.
type HTTPState struct {
	srv *httptest.Server

	mu      sync.Mutex
	states  map[string]*httpEntry
	changed chan struct{} // closed and replaced on every request and SetLock/ClearLock
}

type httpEntry struct {
	faults   map[string]fault // method -> the fault its next requests meet
	state    []byte           // nil: no state
	lock     *LockInfo
	lockJSON []byte // the lock as it was sent, returned verbatim in a 423
	count    Counters
}

// StartHTTPState starts the server on 127.0.0.1 and closes it when the
// test ends.
func StartHTTPState(tb testing.TB) *HTTPState {
	tb.Helper()
	s := &HTTPState{states: map[string]*httpEntry{}, changed: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the server's base URL (http://127.0.0.1:PORT).
func (s *HTTPState) URL() string { return s.srv.URL }

// Address is the URL of the named state, used as address, lock_address and
// unlock_address. name must not be empty (a bug in the test: it panics).
func (s *HTTPState) Address(name string) string {
	if name == "" {
		panic("testbackend: empty http state name")
	}
	return s.srv.URL + "/state/" + url.PathEscape(name)
}

// BackendJSON returns a backend.tf.json body configuring terraform's http
// backend for the named state on this server, with locking (LOCK/UNLOCK on
// the state's own URL) and state writes by POST.
func (s *HTTPState) BackendJSON(name string) []byte {
	addr := s.Address(name)
	b, err := json.MarshalIndent(map[string]any{
		"terraform": map[string]any{
			"backend": map[string]any{
				"http": map[string]any{
					"address":        addr,
					"lock_address":   addr,
					"unlock_address": addr,
					"lock_method":    "LOCK",
					"unlock_method":  "UNLOCK",
					"update_method":  "POST",
				},
			},
		},
	}, "", "  ")
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return append(b, '\n')
}

// State returns the named state's bytes as last written, and whether there
// is one.
func (s *HTTPState) State(name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.states[name]
	if e == nil || e.state == nil {
		return nil, false
	}
	return append([]byte(nil), e.state...), true
}

// Lock returns the named state's lock, and whether it is held.
func (s *HTTPState) Lock(name string) (LockInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.states[name]
	if e == nil || e.lock == nil {
		return LockInfo{}, false
	}
	return *e.lock, true
}

// SetLock plants a lock on the named state, replacing any, as if a
// terraform had taken it: requests see exactly this info (an empty ID
// included).
func (s *HTTPState) SetLock(name string, info LockInfo) {
	b, err := json.Marshal(info)
	if err != nil {
		panic(err) // strings and a time always marshal
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(name)
	e.lock, e.lockJSON = &info, b
	s.notify()
}

// ClearLock removes the named state's lock whoever holds it, and returns
// the lock it removed.
func (s *HTTPState) ClearLock(name string) (LockInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.states[name]
	if e == nil || e.lock == nil {
		return LockInfo{}, false
	}
	l := *e.lock
	e.lock, e.lockJSON = nil, nil
	s.notify()
	return l, true
}

// Counters returns the requests answered so far for the named state.
func (s *HTTPState) Counters(name string) Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.states[name]; e != nil {
		return e.count
	}
	return Counters{}
}

// Wait blocks until cond returns true, calling it now and again after
// every request the server answers (and every SetLock or ClearLock), or
// until ctx ends. cond may call any method of s.
func (s *HTTPState) Wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// fault is what the next n requests of one method meet.
type fault struct {
	n      int
	status int // 0: the connection is cut
}

// Fail makes the next n requests with the given method (GET, POST, LOCK,
// ...) for the named state fail, changing nothing: with status 0 as a
// network fault would (the server resets the connection, so the client
// sees "connection reset by peer"), otherwise with that HTTP status. n <=
// 0 clears the fault.
func (s *HTTPState) Fail(name, method string, n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(name)
	if e.faults == nil {
		e.faults = map[string]fault{}
	}
	e.faults[method] = fault{n: max(n, 0), status: status}
}

// cut resets the connection under w: SO_LINGER 0 makes the close send
// an RST instead of a FIN.
func cut(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "cannot cut the connection: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func (s *HTTPState) entry(name string) *httpEntry {
	e := s.states[name]
	if e == nil {
		e = &httpEntry{}
		s.states[name] = e
	}
	return e
}

// notify wakes every Wait; s.mu must be held.
func (s *HTTPState) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *HTTPState) serve(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/state/")
	if !ok || name == "" {
		http.Error(w, "not found: want /state/NAME", http.StatusNotFound)
		return
	}
	var body []byte
	if r.Method != http.MethodGet {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxStateBytes))
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(name)
	defer s.notify()

	if f := e.faults[r.Method]; f.n > 0 {
		f.n--
		e.faults[r.Method] = f
		e.count.Faults++
		if f.status == 0 {
			cut(w)
		} else {
			http.Error(w, http.StatusText(f.status), f.status)
		}
		return
	}
	switch r.Method {
	case http.MethodGet:
		e.count.Gets++
		if e.state == nil {
			http.Error(w, "no state", http.StatusNotFound) // terraform reads this as "empty"
			return
		}
		sum := md5.Sum(e.state)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
		_, _ = w.Write(e.state)

	case http.MethodPost, http.MethodDelete:
		if r.Method == http.MethodPost {
			e.count.Posts++
		} else {
			e.count.Deletes++
		}
		// A write must carry the holder's lock ID (terraform adds ?ID=), so
		// a process that lost its lock cannot overwrite the state.
		if e.lock != nil && r.URL.Query().Get("ID") != e.lock.ID {
			e.count.WriteConflicts++
			writeLock(w, http.StatusLocked, e.lockJSON)
			return
		}
		if r.Method == http.MethodDelete {
			e.state = nil
			return
		}
		if want := r.Header.Get("Content-MD5"); want != "" {
			sum := md5.Sum(body)
			if got := base64.StdEncoding.EncodeToString(sum[:]); got != want {
				http.Error(w, fmt.Sprintf("Content-MD5 %s does not match the body's %s", want, got), http.StatusBadRequest)
				return
			}
		}
		e.state = body

	case "LOCK":
		e.count.Locks++
		var info LockInfo
		if err := json.Unmarshal(body, &info); err != nil || info.ID == "" {
			http.Error(w, "lock body must be terraform's lock info JSON with an ID", http.StatusBadRequest)
			return
		}
		if e.lock != nil {
			e.count.LockConflicts++
			writeLock(w, http.StatusLocked, e.lockJSON)
			return
		}
		e.lock, e.lockJSON = &info, body

	case "UNLOCK":
		e.count.Unlocks++
		if len(body) == 0 {
			// terraform force-unlock sends no body over http (1.11 at
			// least), so it cannot say which lock it means: it releases
			// whatever is held, as the command promises.
			e.count.ForcedUnlocks++
			e.lock, e.lockJSON = nil, nil
			return
		}
		var info LockInfo
		if err := json.Unmarshal(body, &info); err != nil {
			http.Error(w, "unlock body must be terraform's lock info JSON", http.StatusBadRequest)
			return
		}
		if e.lock == nil {
			return // nothing to release: terraform treats 200 as done
		}
		if info.ID != e.lock.ID {
			e.count.UnlockConflicts++
			writeLock(w, http.StatusConflict, e.lockJSON)
			return
		}
		e.lock, e.lockJSON = nil, nil

	default:
		w.Header().Set("Allow", "GET, POST, DELETE, LOCK, UNLOCK")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// writeLock answers with the current holder's lock info, which terraform
// shows in its "Error acquiring the state lock" message.
func writeLock(w http.ResponseWriter, code int, lockJSON []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(lockJSON)
}
