package testbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PostgresEnvVar is the environment variable through which a process that
// started a server hands it to its children: StartPostgres in a process
// that has it set attaches to that server instead of starting one.
const PostgresEnvVar = "TFISOLATE_TESTBACKEND_PG"

const (
	pgUser     = "postgres"
	pgDatabase = "tfstate"

	// Every command gets a deadline of its own so that a wedged server
	// fails the test instead of hanging it.
	initdbTimeout = 2 * time.Minute
	startTimeout  = 30 * time.Second // pg_ctl -t; the command itself gets a little more
	stopTimeout   = 30 * time.Second
	queryTimeout  = 30 * time.Second
	dialTimeout   = 5 * time.Second
	startAttempts = 3 // a free port can be taken by someone else before postgres binds it

	// maxSocketRoot keeps "<root>/pgXXXXXXXXX/.s.PGSQL.65535.lock" within the
	// ~107-byte limit of a unix socket path.
	maxSocketRoot = 70
)

// pgInstallGlob is where Debian and Ubuntu install the server programs,
// one directory per major version, off PATH. A variable so tests can point
// it elsewhere.
var pgInstallGlob = "/usr/lib/postgresql/*/bin"

// schemaName is what BackendJSON accepts: a plain, unquoted PostgreSQL
// identifier, so the same name works in SQL typed by hand.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Postgres is a throwaway PostgreSQL server for terraform's pg backend, or
// a handle on one that another process started (see PostgresEnvVar).
type Postgres struct {
	connStr string
	port    int
	shared  bool

	// Set only in the process that started the server.
	dir     string // temp root: holds the unix socket and data/
	dataDir string
	bins    pgBins
	cred    *credential
	log     *serverLog
}

// StartPostgres starts a PostgreSQL server for the test and stops and
// removes it when the test ends, or, when PostgresEnvVar is set, attaches
// to the server it names (which the caller then does not stop).
//
// The server listens on 127.0.0.1 at a free port and on a unix socket in a
// short temp dir, trusts every local connection, and has one database for
// state. When no server binaries can be found the test is skipped with a
// message saying how to get them, except under CI=true, where it fails.
func StartPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	if cs := os.Getenv(PostgresEnvVar); cs != "" {
		p, err := attachPostgres(cs)
		if err != nil {
			tb.Fatalf("testbackend: %v", err)
		}
		return p
	}
	bins, err := findPostgres()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("testbackend: PostgreSQL is required under CI=true: %v", err)
		}
		tb.Skipf("skipping: PostgreSQL is not available (%v); install it (Debian: apt-get install postgresql) to run this test", err)
	}
	p, err := startPostgres(bins)
	if err != nil {
		tb.Fatalf("testbackend: %v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("testbackend: last lines of the postgresql log:\n%s", p.log.tail(60))
		}
		if err := p.stop(); err != nil {
			tb.Errorf("testbackend: %v", err)
		}
	})
	return p
}

// ConnStr is the connection string for terraform's pg backend (conn_str):
// postgres://postgres@127.0.0.1:PORT/tfstate?sslmode=disable.
func (p *Postgres) ConnStr() string { return p.connStr }

// Port is the server's TCP port on 127.0.0.1.
func (p *Postgres) Port() int { return p.port }

// Shared reports whether this handle attached to a server started by
// another process through PostgresEnvVar.
func (p *Postgres) Shared() bool { return p.shared }

// Env is PostgresEnvVar=ConnStr(), for a child process's environment, so
// that StartPostgres in the child attaches to this server.
func (p *Postgres) Env() string { return PostgresEnvVar + "=" + p.connStr }

// BackendJSON returns a backend.tf.json body configuring terraform's pg
// backend on this server with the given schema_name. Use one schema per
// component instance: terraform keeps one table of workspaces per schema
// and creates both on init. schema must be a plain lower-case identifier
// (a letter or underscore, then up to 62 letters, digits or underscores);
// anything else is a bug in the test and panics with the name in the
// message.
func (p *Postgres) BackendJSON(schema string) []byte {
	if !schemaName.MatchString(schema) {
		panic(fmt.Sprintf("testbackend: schema name %q is not a plain lower-case identifier", schema))
	}
	b, err := json.MarshalIndent(map[string]any{
		"terraform": map[string]any{
			"backend": map[string]any{
				"pg": map[string]any{"conn_str": p.connStr, "schema_name": schema},
			},
		},
	}, "", "  ")
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return append(b, '\n')
}

// Log returns the server's log as far as it is retained (see WaitLog). It
// is empty on a shared server.
func (p *Postgres) Log() string {
	if p.log == nil {
		return ""
	}
	return p.log.String()
}

// WaitLog blocks until a line of the server's log matches, and returns it.
// It looks at every retained line since the server started, so a line
// logged before the call counts. The server logs every statement when it
// completes ("duration: ... statement: ..." or "execute <unnamed>: ...")
// with the session's application_name in brackets at the start of the line
// ("[app] LOG:  ..."); a terraform run's application_name comes from
// PGAPPNAME in its environment. A line that matches therefore proves the
// statement has already run. WaitLog fails with ErrLogEnded if the server
// stops first, with ctx's error when ctx ends, and with ErrNoServerLog on a
// shared server.
func (p *Postgres) WaitLog(ctx context.Context, match func(line string) bool) (string, error) {
	if p.log == nil {
		return "", ErrNoServerLog
	}
	return p.log.wait(ctx, match)
}

// Query runs one SQL statement with psql against the state database and
// returns its rows, each a slice of column values in text form. It is for
// inspecting what terraform wrote (tables "<schema>.states"), not for load.
func (p *Postgres) Query(ctx context.Context, sql string) ([][]string, error) {
	psql, err := findPsql(p.bins)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	// Unaligned, tuples only: fields end with a unit separator and rows
	// with a NUL, neither of which PostgreSQL text can contain.
	cmd := exec.CommandContext(ctx, psql, "-X", "-q", "-A", "-t", "-F", "\x1f", "-0",
		"-v", "ON_ERROR_STOP=1", "-d", p.connStr, "-c", sql)
	cmd.Env = append(cleanEnv(), "PGCONNECT_TIMEOUT=10")
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("query %q: %w: %s", sql, err, strings.TrimSpace(stderr.String()))
	}
	out := stdout.String()
	if out == "" {
		return nil, nil
	}
	var rows [][]string
	for rec := range strings.SplitSeq(strings.TrimSuffix(out, "\x00"), "\x00") {
		rows = append(rows, strings.Split(rec, "\x1f"))
	}
	return rows, nil
}

// AdvisoryLock is one advisory lock granted in the state database, with the
// session that holds it.
type AdvisoryLock struct {
	// Key is the bigint given to pg_advisory_lock: terraform's pg backend
	// locks the workspace row's id in "<schema>.states", and -1 while it
	// creates a workspace.
	Key int64
	// PID is the holding server process.
	PID int
	// Application is the holding session's application_name (PGAPPNAME in
	// terraform's environment): the only way to name the holder of a pg
	// lock, since terraform's own lock error carries the requester's info.
	Application string
}

// AdvisoryLocks lists the advisory locks currently granted in the state
// database, ordered by key.
func (p *Postgres) AdvisoryLocks(ctx context.Context) ([]AdvisoryLock, error) {
	rows, err := p.Query(ctx, `SELECT l.classid, l.objid, l.pid, coalesce(a.application_name, '')
FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
ORDER BY l.classid, l.objid, l.pid`)
	if err != nil {
		return nil, err
	}
	locks := make([]AdvisoryLock, 0, len(rows))
	for _, r := range rows {
		if len(r) != 4 {
			return nil, fmt.Errorf("advisory locks: unexpected row %q", r)
		}
		hi, err1 := strconv.ParseUint(r[0], 10, 32)
		lo, err2 := strconv.ParseUint(r[1], 10, 32)
		pid, err3 := strconv.Atoi(r[2])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("advisory locks: row %q: %w", r, err)
		}
		locks = append(locks, AdvisoryLock{Key: int64(hi<<32 | lo), PID: pid, Application: r[3]})
	}
	sort.SliceStable(locks, func(i, j int) bool { return locks[i].Key < locks[j].Key })
	return locks, nil
}

// attachPostgres checks that connStr names a loopback server that answers,
// so a child never talks to anything but this machine.
func attachPostgres(connStr string) (*Postgres, error) {
	u, err := url.Parse(connStr)
	if err != nil || u.Scheme != "postgres" {
		return nil, fmt.Errorf("%s=%q is not a postgres:// connection string", PostgresEnvVar, connStr)
	}
	if u.Hostname() != "127.0.0.1" {
		return nil, fmt.Errorf("%s=%q: host must be 127.0.0.1", PostgresEnvVar, connStr)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("%s=%q: no port", PostgresEnvVar, connStr)
	}
	c, err := net.DialTimeout("tcp", u.Host, dialTimeout)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: server not reachable: %w", PostgresEnvVar, connStr, err)
	}
	_ = c.Close()
	bins, _ := findPostgres() // only for psql; a missing server install is fine here
	return &Postgres{connStr: connStr, port: port, shared: true, bins: bins}, nil
}

// pgBins are the server programs, all from one installation.
type pgBins struct{ dir, initdb, pgCtl, postgres string }

// findPostgres looks for a directory holding initdb, pg_ctl and postgres:
// the one initdb on PATH resolves to first, then /usr/lib/postgresql/*/bin,
// newest major version first (Debian keeps the server off PATH).
func findPostgres() (pgBins, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(r))
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	glob, _ := filepath.Glob(pgInstallGlob)
	sort.Slice(glob, func(i, j int) bool { return majorOf(glob[i]) > majorOf(glob[j]) })
	dirs = append(dirs, glob...)
	for _, d := range dirs {
		b := pgBins{dir: d, initdb: filepath.Join(d, "initdb"), pgCtl: filepath.Join(d, "pg_ctl"), postgres: filepath.Join(d, "postgres")}
		if isExecutable(b.initdb) && isExecutable(b.pgCtl) && isExecutable(b.postgres) {
			return b, nil
		}
	}
	return pgBins{}, fmt.Errorf("%w: no initdb, pg_ctl and postgres side by side on PATH or in /usr/lib/postgresql/*/bin", ErrNoPostgres)
}

func findPsql(b pgBins) (string, error) {
	if b.dir != "" && isExecutable(filepath.Join(b.dir, "psql")) {
		return filepath.Join(b.dir, "psql"), nil
	}
	if p, err := exec.LookPath("psql"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w on PATH or beside the server binaries", ErrNoPsql)
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// cleanEnv is the environment for the server programs and psql: no PG*
// variable of the user's may redirect them to another server or data dir.
func cleanEnv() []string {
	env := []string{"LC_ALL=C", "LANG=C", "TZ=UTC"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// socketRoot is where the temp dir goes: os.TempDir() unless its path is
// too long for a unix socket, has characters pg_ctl's shell command line
// would mangle, or (when the server runs as another user) cannot be
// traversed by that user; then /tmp.
func socketRoot(cred *credential) string {
	root := os.TempDir()
	if len(root) <= maxSocketRoot && plainPath(root) && (cred == nil || worldTraversable(root)) {
		return root
	}
	return "/tmp"
}

var plainPathRE = regexp.MustCompile(`^[A-Za-z0-9/._+-]+$`)

func plainPath(p string) bool { return plainPathRE.MatchString(p) }

func worldTraversable(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func startPostgres(bins pgBins) (_ *Postgres, err error) {
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(socketRoot(cred), "pg")
	if err != nil {
		return nil, fmt.Errorf("start postgresql: %w", err)
	}
	p := &Postgres{dir: dir, dataDir: filepath.Join(dir, "data"), bins: bins, cred: cred}
	defer func() {
		if err != nil {
			// Nothing half-started is left behind: no server, no dir.
			if p.log != nil {
				err = fmt.Errorf("%w\nlast lines of the postgresql log:\n%s", err, p.log.tail(40))
			}
			_ = p.stop()
		}
	}()
	if err := cred.own(dir); err != nil {
		return nil, fmt.Errorf("start postgresql: %w", err)
	}
	if out, err := p.run(initdbTimeout, "", bins.initdb, "-D", p.dataDir, "-U", pgUser, "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"); err != nil {
		return nil, fmt.Errorf("initdb %s: %w: %s", p.dataDir, err, out)
	}
	// Single-user mode creates the database before the server listens,
	// so no client program is needed for it.
	if out, err := p.run(initdbTimeout, "CREATE DATABASE "+pgDatabase+";\n", bins.postgres, "--single",
		"-D", p.dataDir, "-F", "-c", "exit_on_error=true", "postgres"); err != nil {
		return nil, fmt.Errorf("create database %s: %w: %s", pgDatabase, err, out)
	}
	if err := appendFile(filepath.Join(p.dataDir, "postgresql.conf"), "\ninclude 'tfisolate.conf'\n"); err != nil {
		return nil, fmt.Errorf("start postgresql: %w", err)
	}

	// pg_ctl hands its stdout to the postmaster, which logs to it: the read
	// end gives this process the log as it is written, and EOF once every
	// server process has exited.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start postgresql: %w", err)
	}
	p.log = newServerLog(r)
	defer w.Close() // the server processes hold their own copies

	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("start postgresql: %w", err)
		}
		mark := p.log.len()
		if err := p.writeConf(port); err != nil {
			return nil, fmt.Errorf("start postgresql: %w", err)
		}
		err = p.pgCtlStart(w)
		if err == nil {
			p.port = port
			p.connStr = fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", pgUser, port, pgDatabase)
			return p, nil
		}
		if attempt == startAttempts || !p.log.containsSince(mark, "could not bind", "Address already in use") {
			return nil, fmt.Errorf("pg_ctl start -D %s: %w", p.dataDir, err)
		}
	}
}

// writeConf (re)writes the settings the include in postgresql.conf reads:
// loopback only, the socket in the short temp dir, durability off (the
// data is thrown away), and every statement logged with its session's
// application_name when it completes, so tests can wait on what a terraform
// run has done.
func (p *Postgres) writeConf(port int) error {
	conf := fmt.Sprintf(`listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
fsync = off
synchronous_commit = off
full_page_writes = off
log_destination = 'stderr'
logging_collector = off
log_min_duration_statement = 0
log_line_prefix = '[%%a] '
log_timezone = 'UTC'
`, port, strings.ReplaceAll(p.dir, "'", "''"))
	return os.WriteFile(filepath.Join(p.dataDir, "tfisolate.conf"), []byte(conf), 0o644)
}

func (p *Postgres) pgCtlStart(logw *os.File) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.bins.pgCtl, "start", "-w", "-t", strconv.Itoa(int(startTimeout/time.Second)), "-D", p.dataDir)
	cmd.Env = append(cleanEnv(), "HOME="+p.dir)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = logw, logw
	cmd.SysProcAttr = p.cred.sysProcAttr()
	return cmd.Run()
}

// stop shuts the server down (fast: open sessions are ended), waits until
// every server process has gone, and removes the temp dir.
func (p *Postgres) stop() error {
	if p.dir == "" {
		return nil
	}
	var errs []error
	if _, err := os.Stat(filepath.Join(p.dataDir, "postmaster.pid")); err == nil {
		if out, err := p.run(stopTimeout+10*time.Second, "", p.bins.pgCtl, "stop", "-D", p.dataDir,
			"-m", "fast", "-w", "-t", strconv.Itoa(int(stopTimeout/time.Second))); err != nil {
			errs = append(errs, fmt.Errorf("pg_ctl stop -D %s: %w: %s", p.dataDir, err, out))
		}
	}
	if p.log != nil {
		select {
		case <-p.log.done:
		case <-time.After(stopTimeout):
			errs = append(errs, fmt.Errorf("postgresql in %s: server processes still running %v after stop", p.dir, stopTimeout))
		}
	}
	if err := os.RemoveAll(p.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", p.dir, err))
	}
	p.dir = ""
	return errors.Join(errs...)
}

// run runs one server program to completion as the server's user, with a
// deadline, and returns its combined output.
func (p *Postgres) run(timeout time.Duration, stdin, prog string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(cleanEnv(), "HOME="+p.dir)
	cmd.Dir = p.dir
	cmd.SysProcAttr = p.cred.sysProcAttr()
	cmd.WaitDelay = time.Second
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

// freePort asks the kernel for a free loopback port. Someone may take it
// before postgres binds it; startPostgres retries with another.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
