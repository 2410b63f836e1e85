// Package testbackend starts real remote state backends for tests, from
// test code and with nothing installed by hand beyond PostgreSQL's server
// package: a throwaway PostgreSQL server for terraform's pg backend, a
// loopback HTTP state server for terraform's http backend, and a moto
// server (an AWS emulator) for the s3 backend. Each hands out a
// backend.tf.json body (BackendJSON) that a test puts beside a root module
// (for instance in workdir.Spec.Files).
//
// # PostgreSQL (StartPostgres)
//
// Guarantees:
//   - The server listens on 127.0.0.1 at a free port and on a unix socket in
//     a private, short temp dir (os.TempDir(), or /tmp when that path is
//     too long for a socket); never on another address. Every local
//     connection is trusted; the user is "postgres", the database "tfstate"
//     (ConnStr). Durability is off: the data is thrown away.
//   - initdb, pg_ctl and postgres come from one installation: the initdb on
//     PATH, else /usr/lib/postgresql/<newest>/bin. When none is found the
//     test is skipped saying how to install it, except under CI=true,
//     where it fails (the rule testenv.Terraform follows).
//   - When the test runs as root, the server programs run as "nobody" (or
//     "postgres"), since postgres refuses root; otherwise as the test's
//     own user.
//   - Every server command has a deadline. At the test's cleanup the server
//     is stopped (pg_ctl stop -m fast, which ends open sessions), every
//     server process is waited for, and the temp dir is removed; a failure
//     there fails the test. A start that fails leaves nothing behind.
//   - Children share the server: a process started with Env() in its
//     environment gets a handle on the same server from StartPostgres, and
//     its cleanup leaves the server running. Such a handle only accepts a
//     server on 127.0.0.1.
//   - The server logs every statement when it has completed, prefixed with
//     "[application_name] " (set PGAPPNAME in terraform's environment to name
//     a run), and WaitLog lets a test wait for such a line: it proves that the
//     statement ran, so tests can order themselves on what terraform did
//     in the server, without sleeps. Query and AdvisoryLocks (through psql)
//     show what is stored and who holds which lock.
//
// Limits, most of them terraform's pg backend's own:
//   - Its lock error ("Error acquiring the state lock") carries the lock
//     info of the run that asked, not of the holder: the holder is named only
//     by the server (AdvisoryLocks, with the holder's application_name).
//   - Its locks are session advisory locks: they go when the holding
//     terraform's connection closes, so a killed terraform leaves no stale
//     lock and force-unlock does nothing. Stale-lock tests need HTTPState.
//   - Creating a workspace (the first state write in a schema) holds one
//     database-wide lock (key -1), and every lock attempt also tries it: while
//     any schema's workspace is being created, a lock on any other schema
//     fails unless terraform waits (-lock-timeout). Concurrent first applies
//     over many schemas of one server need a lock timeout.
//   - Its init creates the schema's table with CREATE ... IF NOT EXISTS,
//     which PostgreSQL does not make safe under concurrency: concurrent
//     first inits on one schema, and on a fresh server even on different
//     schemas (they share the sequence public.global_states_id_seq), can
//     fail with "duplicate key value violates unique constraint
//     pg_type_typname_nsp_index" (or pg_class_relname_nsp_index), or with
//     'relation "global_states_id_seq" already exists'. Init the first
//     instance of a schema alone, or retry.
//   - The log is kept in memory (at most 32 MiB; older lines are then
//     dropped) and only in the process that started the server. A test
//     process killed outright leaves its server running (pg_ctl detaches
//     it) and its temp dir behind. Query and AdvisoryLocks need psql.
//
// # S3 and DynamoDB (StartMoto)
//
// Guarantees:
//   - moto_server's app, run by the python3 on PATH, listens on 127.0.0.1
//     at a free port (tried three times); its start is awaited by its own
//     "Running on" line, within a minute. When there is no python3 or it
//     cannot import moto's server the test is skipped naming moto_server,
//     except under CI=true, where it fails.
//   - The server handles one request at a time (moto is not designed for
//     concurrent access) and closes each connection after its response,
//     so concurrent engines are served in turn and no idle keep-alive
//     connection holds it; a client stalled mid-request holds it for at
//     most 30 s.
//   - BackendJSON configures the s3 backend with the server as its S3 and
//     DynamoDB endpoint, path-style addressing, fixed test credentials and
//     no AWS account or metadata lookups, locking with the DynamoDB table
//     LockTable (CreateLockTable) or with lock files (use_lockfile).
//   - Object and Lock read what the engine wrote: a state, and the lock
//     info the lock kind keeps (the table item's Info, or KEY.tflock).
//   - At the test's cleanup the server's process group is killed and
//     waited for. A test process killed outright leaves it running.
//
// # HTTP (StartHTTPState)
//
// Guarantees:
//   - An httptest server on 127.0.0.1 holds any number of states, one per
//     name, at /state/NAME: GET reads (404 when there is none; Content-MD5 is
//     set), POST writes (a Content-MD5 that does not match the body is
//     refused with 400), DELETE removes.
//   - LOCK takes the lock with terraform's lock info JSON (ID, Operation,
//     Info, Who, Version, Created, Path) or answers 423 Locked with the
//     holder's lock info exactly as it was sent. UNLOCK with the holder's ID
//     releases it; with another ID it answers 409 Conflict and the holder's
//     info. While a state is locked, a POST or DELETE that does not carry the
//     holder's ID (terraform adds ?ID= to its writes) is refused with 423, so
//     a run that lost its lock cannot overwrite the state.
//   - Locks live in the server, not in the terraform that took them: a
//     terraform killed while holding a lock leaves it there until someone
//     unlocks it. Lock, SetLock and ClearLock inspect, plant and remove
//     locks; Counters counts the requests per state (conflicts apart); Wait
//     lets a test wait for any condition on them without sleeps.
//
// Limits:
//   - terraform force-unlock sends UNLOCK with no body over http (1.11), so
//     the server cannot check its ID: a body-less UNLOCK releases whatever
//     lock is held (counted as ForcedUnlocks).
//   - terraform's lock error names the holder only by its ID ("HTTP remote
//     state already locked: ID=..."); the "Lock Info" block it prints is
//     its own request's.
//   - State and locks are in memory and end with the test; no auth, no TLS,
//     no workspaces (terraform's http backend has none).
package testbackend
