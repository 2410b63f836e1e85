package testbackend

import "errors"

var (
	// ErrNoPostgres means no usable PostgreSQL server binaries (initdb,
	// pg_ctl, postgres) were found on PATH or under /usr/lib/postgresql.
	ErrNoPostgres = errors.New("postgresql server binaries not found")

	// ErrNoPsql means the psql client, which Query and AdvisoryLocks use,
	// was not found.
	ErrNoPsql = errors.New("psql not found")

	// ErrNoServerLog means the server's log is not readable in this process:
	// the server was started by another process and shared through
	// PostgresEnvVar.
	ErrNoServerLog = errors.New("postgresql server log is only readable in the process that started the server")

	// ErrLogEnded means the server's log ended (the server stopped) before
	// a line matched.
	ErrLogEnded = errors.New("postgresql server log ended")
)
