//go:build unix

package testbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// S3Lock is how terraform's s3 backend locks a state.
type S3Lock int

const (
	// DynamoDBLock keeps the lock as an item of a DynamoDB table
	// (dynamodb_table), keyed by "BUCKET/KEY".
	DynamoDBLock S3Lock = iota
	// LockFile keeps the lock as an object KEY.tflock beside the state
	// (use_lockfile, S3-native locking).
	LockFile
)

func (l S3Lock) String() string {
	if l == LockFile {
		return "use_lockfile"
	}
	return "dynamodb"
}

const (
	motoRegion     = "us-east-1"
	motoStartup    = 60 * time.Second // a cold Python start on a loaded machine
	motoRequest    = 30 * time.Second
	motoStop       = 30 * time.Second
	motoAttempts   = 3 // a free port can be taken by someone else before moto binds it
	motoCredential = "test"
)

// motoRunning is the line werkzeug prints once the server accepts
// connections.
var motoRunning = regexp.MustCompile(`Running on http://127\.0\.0\.1:(\d+)`)

// Moto is a throwaway moto server (an AWS emulator) on loopback: S3 for
// terraform's s3 backend, DynamoDB for its lock table.
type Moto struct {
	endpoint string
	cmd      *exec.Cmd
	exited   chan struct{}
	log      *serverLog
	client   *http.Client
}

// StartMoto starts a moto server on 127.0.0.1 at a free port for the
// test and stops it when the test ends. It runs moto_server's own app
// through the python3 on PATH (see motoLauncher), serving one request at
// a time; when there is no python3 or it cannot import moto's server the
// test is skipped with a message naming moto_server, except under
// CI=true, where it fails.
func StartMoto(tb testing.TB) *Moto {
	tb.Helper()
	var m *Moto
	py, err := exec.LookPath("python3")
	if err != nil {
		err = fmt.Errorf("%w: there is no python3 on PATH", errNoMoto)
	} else {
		for attempt := 1; ; attempt++ {
			m, err = startMoto(py)
			if err == nil || errors.Is(err, errNoMoto) || attempt == motoAttempts {
				break
			}
		}
	}
	switch {
	case errors.Is(err, errNoMoto) && os.Getenv("CI") != "true":
		tb.Skipf("skipping: moto_server is not available (%v); install it (pip install 'moto[server]') to run this test", err)
	case errors.Is(err, errNoMoto):
		tb.Fatalf("testbackend: moto_server is required under CI=true: %v", err)
	case err != nil:
		tb.Fatalf("testbackend: %v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("testbackend: last lines of the moto log:\n%s", m.log.tail(40))
		}
		if err := m.stop(); err != nil {
			tb.Errorf("testbackend: %v", err)
		}
	})
	return m
}

// motoLauncher builds the app moto_server builds (moto/server.py: a
// DomainDispatcherApplication over create_backend_app, debug on, MOTO_PORT
// set) and serves it with werkzeug's run_simple on the host and port given
// as arguments, as moto_server -H HOST -p PORT would, except threaded=False
// where moto_server passes threaded=True. moto is not designed for
// multithreaded access (its FAQ says so), yet a Run's engines call one
// server at once, and a CI run of TestS3Backend saw OpenTofu's release of
// its DynamoDB lock fail with ConditionalCheckFailedException. A stress of
// concurrent locks did not reproduce that failure (TestMotoConcurrentLocks
// passed against the threaded server too), so this removes the concurrent
// access moto documents it cannot take, not a race seen here.
//
// One thread does not stall keep-alive clients: werkzeug answers every
// response with "Connection: close" and closes the connection (threaded or
// not; Python's http.server cannot drain a kept-alive stream), so no idle
// pooled connection of an engine can hold the thread
// (TestMotoClosesEachConnection checks it). The handler's timeout
// (motoRequest) bounds how long a client that stalls mid-request can hold
// it.
const motoLauncher = `
import os, sys
try:
    from werkzeug.serving import WSGIRequestHandler, run_simple
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
except ImportError as e:
    print("cannot import moto's server:", e)
    sys.exit(%d)

host, port = sys.argv[1], int(sys.argv[2])
os.environ.setdefault("MOTO_PORT", str(port))

class Handler(WSGIRequestHandler):
    timeout = %d

app = DomainDispatcherApplication(create_backend_app)
app.debug = True
run_simple(host, port, app, threaded=False, request_handler=Handler)
`

// errNoMoto says there is no python3 that can run motoLauncher, or moto's
// server (moto, werkzeug, flask) is not installed for it. moto_server on
// PATH is often a pyenv shim, not the interpreter, so the python3 on PATH
// is what runs the launcher; the launcher's own imports are the check,
// which spares a second interpreter start for each server.
var errNoMoto = errors.New("moto cannot run")

// motoNoModule is the launcher's exit status when its imports fail.
const motoNoModule = 3

func startMoto(py string) (*Moto, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	launcher := fmt.Sprintf(motoLauncher, motoNoModule, int(motoRequest/time.Second))
	cmd := exec.Command(py, "-c", launcher, "127.0.0.1", strconv.Itoa(port))
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	_ = pw.Close() // the server holds its own copy; EOF comes when it exits
	if err != nil {
		_ = pr.Close()
		return nil, fmt.Errorf("start moto: %w", err)
	}
	m := &Moto{cmd: cmd, exited: make(chan struct{}), log: newServerLog(pr), client: &http.Client{Timeout: motoRequest}}
	go func() {
		_ = cmd.Wait()
		close(m.exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), motoStartup)
	defer cancel()
	line, err := m.log.wait(ctx, motoRunning.MatchString)
	if err != nil {
		if m.stop() == nil && m.cmd.ProcessState.ExitCode() == motoNoModule {
			return nil, fmt.Errorf("%w for %s: %s", errNoMoto, py, m.log.tail(5))
		}
		return nil, fmt.Errorf("moto did not listen on 127.0.0.1:%d (%v):\n%s", port, err, m.log.tail(20))
	}
	if got := motoRunning.FindStringSubmatch(line)[1]; got != strconv.Itoa(port) {
		_ = m.stop()
		return nil, fmt.Errorf("moto reports port %s, asked for %d", got, port)
	}
	m.endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	return m, nil
}

// stop ends the server's process group and waits for it.
func (m *Moto) stop() error {
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-m.exited:
		return nil
	case <-time.After(motoStop):
		return fmt.Errorf("moto (pid %d) did not exit within %s of SIGKILL", m.cmd.Process.Pid, motoStop)
	}
}

// Endpoint is the server's URL, http://127.0.0.1:PORT, for S3 and
// DynamoDB alike.
func (m *Moto) Endpoint() string { return m.endpoint }

// Env is what an AWS client needs to talk to the server (fixed test
// credentials and the region), as KEY=VALUE.
func (m *Moto) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + motoCredential, "AWS_SECRET_ACCESS_KEY=" + motoCredential,
		"AWS_REGION=" + motoRegion, "AWS_EC2_METADATA_DISABLED=true"}
}

// BackendJSON returns a backend.tf.json body configuring terraform's s3
// backend on this server: the state at bucket/key, locked as lock says
// (DynamoDB: the table "locks", see CreateLockTable). The test
// credentials are in the body, so the engine needs no AWS environment.
func (m *Moto) BackendJSON(bucket, key string, lock S3Lock) []byte {
	cfg := map[string]any{
		"bucket": bucket, "key": key, "region": motoRegion,
		"endpoints":                   map[string]any{"s3": m.endpoint, "dynamodb": m.endpoint},
		"use_path_style":              true,
		"skip_credentials_validation": true,
		"skip_requesting_account_id":  true,
		"skip_metadata_api_check":     true,
		"skip_region_validation":      true,
		"access_key":                  motoCredential,
		"secret_key":                  motoCredential,
	}
	if lock == LockFile {
		cfg["use_lockfile"] = true
	} else {
		cfg["dynamodb_table"] = LockTable
	}
	b, err := json.MarshalIndent(map[string]any{"terraform": map[string]any{"backend": map[string]any{"s3": cfg}}}, "", "  ")
	if err != nil {
		panic(err) // maps of strings and bools always marshal
	}
	return append(b, '\n')
}

// LockTable is the DynamoDB table BackendJSON names for DynamoDBLock.
const LockTable = "locks"

// CreateBucket creates an S3 bucket.
func (m *Moto) CreateBucket(ctx context.Context, bucket string) error {
	_, err := m.s3(ctx, http.MethodPut, "/"+bucket, nil)
	return err
}

// CreateLockTable creates LockTable, keyed by LockID as terraform's s3
// backend wants it.
func (m *Moto) CreateLockTable(ctx context.Context) error {
	_, err := m.dynamo(ctx, "CreateTable", map[string]any{
		"TableName":            LockTable,
		"AttributeDefinitions": []any{map[string]any{"AttributeName": "LockID", "AttributeType": "S"}},
		"KeySchema":            []any{map[string]any{"AttributeName": "LockID", "KeyType": "HASH"}},
		"BillingMode":          "PAY_PER_REQUEST",
	})
	return err
}

// Object returns the object at bucket/key; ok is false when there is none.
func (m *Moto) Object(ctx context.Context, bucket, key string) (data []byte, ok bool, err error) {
	data, err = m.s3(ctx, http.MethodGet, "/"+bucket+"/"+key, nil)
	if errors.Is(err, errNotFound) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// Lock returns the lock held on the state at bucket/key, as the lock kind
// keeps it; ok is false when it is not locked.
func (m *Moto) Lock(ctx context.Context, bucket, key string, lock S3Lock) (info LockInfo, ok bool, err error) {
	var raw []byte
	if lock == LockFile {
		raw, ok, err = m.Object(ctx, bucket, key+".tflock")
	} else {
		var out []byte
		out, err = m.dynamo(ctx, "GetItem", map[string]any{"TableName": LockTable,
			"Key": map[string]any{"LockID": map[string]any{"S": bucket + "/" + key}}})
		if err == nil {
			var item struct {
				Item map[string]struct{ S string }
			}
			if err = json.Unmarshal(out, &item); err == nil {
				if v, found := item.Item["Info"]; found {
					raw, ok = []byte(v.S), true
				}
			}
		}
	}
	if err != nil || !ok {
		return LockInfo{}, false, err
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		return LockInfo{}, false, fmt.Errorf("lock of %s/%s is not lock info: %w: %s", bucket, key, err, raw)
	}
	return info, true, nil
}

var errNotFound = errors.New("not found")

// s3 sends one S3 request (moto takes the credential scope from the
// Authorization header and checks no signature).
func (m *Moto) s3(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	return m.do(ctx, method, path, "s3", body, nil)
}

// dynamo sends one DynamoDB JSON request.
func (m *Moto) dynamo(ctx context.Context, op string, in any) ([]byte, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	return m.do(ctx, http.MethodPost, "/", "dynamodb", body, map[string]string{
		"X-Amz-Target": "DynamoDB_20120810." + op, "Content-Type": "application/x-amz-json-1.0"})
}

func (m *Moto) do(ctx context.Context, method, path, service string, body []byte, header map[string]string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, m.endpoint+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/20260101/%s/%s/aws4_request, SignedHeaders=host, Signature=0",
		motoCredential, motoRegion, service))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("moto %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("moto %s %s: %w", method, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("moto %s %s: %w", method, path, errNotFound)
	case resp.StatusCode/100 != 2:
		return nil, fmt.Errorf("moto %s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(out)))
	}
	return out, nil
}
