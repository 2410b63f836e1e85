package testbackend

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testTimeout bounds every wait in these tests; nothing in them should take
// more than a few seconds.
const testTimeout = 2 * time.Minute

func lockJSON(t *testing.T, id, who string) string {
	t.Helper()
	b, err := json.Marshal(LockInfo{ID: id, Operation: "OperationTypeApply", Who: who, Version: "1.11.4",
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	require.NoError(t, err)
	return string(b)
}

func md5Of(s string) string {
	sum := md5.Sum([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// TestHTTPStateProtocol walks one state through the protocol terraform's
// http backend speaks, step by step, over real HTTP.
func TestHTTPStateProtocol(t *testing.T) {
	s := StartHTTPState(t)
	lockA, lockB := lockJSON(t, "id-a", "a@host"), lockJSON(t, "id-b", "b@host")
	state := `{"version":4,"serial":1}`
	steps := []struct {
		name, method, path, body, md5 string
		wantCode                      int
		wantBody                      string // contained in the answer
	}{
		{"no state yet", "GET", "/state/s1", "", "", 404, ""},
		{"lock", "LOCK", "/state/s1", lockA, "", 200, ""},
		{"second lock is refused with the holder", "LOCK", "/state/s1", lockB, "", 423, `"ID":"id-a"`},
		{"write without the lock ID", "POST", "/state/s1", state, "", 423, `"Who":"a@host"`},
		{"write with another ID", "POST", "/state/s1?ID=id-b", state, "", 423, `"ID":"id-a"`},
		{"write with a bad Content-MD5", "POST", "/state/s1?ID=id-a", state, md5Of("other"), 400, "Content-MD5"},
		{"write with the holder's ID", "POST", "/state/s1?ID=id-a", state, md5Of(state), 200, ""},
		{"read", "GET", "/state/s1", "", "", 200, state},
		{"unlock with another ID", "UNLOCK", "/state/s1", lockB, "", 409, `"ID":"id-a"`},
		{"unlock with the holder's ID", "UNLOCK", "/state/s1", lockA, "", 200, ""},
		{"unlock when free", "UNLOCK", "/state/s1", lockA, "", 200, ""},
		{"write when free", "POST", "/state/s1", state, "", 200, ""},
		{"lock without an ID", "LOCK", "/state/s1", `{"Who":"x"}`, "", 400, "ID"},
		{"lock that is not JSON", "LOCK", "/state/s1", `nope`, "", 400, "lock info"},
		{"lock again", "LOCK", "/state/s1", lockB, "", 200, ""},
		{"forced unlock (no body, as terraform force-unlock sends)", "UNLOCK", "/state/s1", "", "", 200, ""},
		{"delete", "DELETE", "/state/s1", "", "", 200, ""},
		{"gone", "GET", "/state/s1", "", "", 404, ""},
		{"other method", "PUT", "/state/s1", state, "", 405, ""},
		{"outside /state/", "GET", "/other", "", "", 404, ""},
		{"no name", "GET", "/state/", "", "", 404, ""},
	}
	for _, st := range steps {
		req, err := http.NewRequest(st.method, s.URL()+st.path, strings.NewReader(st.body))
		require.NoError(t, err, st.name)
		if st.md5 != "" {
			req.Header.Set("Content-MD5", st.md5)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, st.name)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err, st.name)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, st.wantCode, resp.StatusCode, "%s: %s", st.name, body)
		require.Contains(t, string(body), st.wantBody, st.name)
		if st.method == "GET" && st.wantCode == 200 {
			require.Equal(t, md5Of(string(body)), resp.Header.Get("Content-MD5"), st.name)
		}
	}
	require.Equal(t, Counters{
		Gets: 3, Posts: 5, Deletes: 1,
		Locks: 5, LockConflicts: 1,
		Unlocks: 4, UnlockConflicts: 1, ForcedUnlocks: 1,
		WriteConflicts: 2,
	}, s.Counters("s1"))
	_, held := s.Lock("s1")
	require.False(t, held)
	_, ok := s.State("s1")
	require.False(t, ok)
	require.Equal(t, Counters{}, s.Counters("never-used"))
}

func TestHTTPStateSetLockAndState(t *testing.T) {
	s := StartHTTPState(t)
	planted := LockInfo{ID: "planted", Who: "someone@elsewhere", Operation: "OperationTypePlan",
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s.SetLock("a/b c", planted)
	got, held := s.Lock("a/b c")
	require.True(t, held)
	require.Equal(t, planted, got)

	// The name is escaped into the address and routed back to the same state.
	require.Equal(t, s.URL()+"/state/a%2Fb%20c", s.Address("a/b c"))
	req, err := http.NewRequest("LOCK", s.Address("a/b c"), strings.NewReader(lockJSON(t, "x", "x@y")))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var holder LockInfo
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&holder))
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusLocked, resp.StatusCode)
	require.Equal(t, planted, holder)

	cleared, ok := s.ClearLock("a/b c")
	require.True(t, ok)
	require.Equal(t, planted, cleared)
	_, ok = s.ClearLock("a/b c")
	require.False(t, ok)

	resp, err = http.Post(s.Address("a/b c"), "application/json", bytes.NewReader([]byte(`{"serial":2}`)))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	st, ok := s.State("a/b c")
	require.True(t, ok)
	require.JSONEq(t, `{"serial":2}`, string(st))

	require.Panics(t, func() { s.Address("") })
}

func TestHTTPStateBackendJSON(t *testing.T) {
	s := StartHTTPState(t)
	var doc struct {
		Terraform struct {
			Backend struct {
				HTTP map[string]string `json:"http"`
			} `json:"backend"`
		} `json:"terraform"`
	}
	require.NoError(t, json.Unmarshal(s.BackendJSON("comp"), &doc))
	addr := s.URL() + "/state/comp"
	require.Equal(t, map[string]string{
		"address": addr, "lock_address": addr, "unlock_address": addr,
		"lock_method": "LOCK", "unlock_method": "UNLOCK", "update_method": "POST",
	}, doc.Terraform.Backend.HTTP)
}

func TestHTTPStateWait(t *testing.T) {
	s := StartHTTPState(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	done := make(chan error, 1)
	go func() {
		done <- s.Wait(ctx, func() bool { _, held := s.Lock("w"); return held })
	}()
	req, err := http.NewRequest("LOCK", s.Address("w"), strings.NewReader(lockJSON(t, "id", "me@here")))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.NoError(t, <-done)

	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	require.ErrorIs(t, s.Wait(cctx, func() bool { return false }), context.Canceled)
}
