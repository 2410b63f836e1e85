package runner

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/tfisolate/tfisolate/internal/retry"
)

// RetryPolicy says which failures of terraform init and of a predefined
// command are retried, how often and how long to wait in between. A
// failure is transient when its message (terraform's error output
// included) matches one of DefaultTransientErrors or Patterns. Custom
// steps are not retried: the runner cannot know that they are safe to
// repeat. State locks are not failures here: they are waited out (see
// WithLockTimeout).
//
// Commands that change infrastructure (Apply, ApplyPlan, Destroy and
// the destroy-plan forms) are retried only while terraform provably
// started no change: a failure while locking, initializing, reading the
// backend or planning. Once terraform reported the first resource
// operation or provisioner, or said it could not save the state, the
// failure is the unit's, however transient it looks: a repeated apply
// would plan against a state that lacks what the first one created and
// create it twice. A state terraform could not save is kept for the
// user (see ErrStateNotSaved).
type RetryPolicy struct {
	// Max is how many times a failed attempt is repeated (0: never).
	Max int
	// Backoff is the wait before the first retry; each later retry waits
	// twice as long, up to MaxBackoff. Each wait is then spread at random
	// over 80-120 % of that (jitter), so units throttled together do not
	// all come back at the same moment.
	Backoff, MaxBackoff time.Duration
	// Patterns are added to DefaultTransientErrors.
	Patterns []*regexp.Regexp
	// NoDefaults leaves DefaultTransientErrors out: only Patterns count.
	NoDefaults bool
	// NoOutOfMemoryRetry turns off the one retry of a unit the kernel
	// killed for memory (ErrOutOfMemory), which otherwise runs again,
	// once, when fewer units run (and its measured peak fits the
	// budget). Retried: Init, Plan, SavePlan, Validate and Output, which
	// change nothing but the instance's own files; Apply and Destroy
	// only while terraform provably started no change (as for transient
	// errors above: terraform writes state as it goes, so an apply
	// killed once a change began is never applied again). Never
	// retried: ApplyPlan (a saved plan whose apply was cut off is never
	// applied again) and custom steps.
	NoOutOfMemoryRetry bool
}

// DefaultTransientErrors match failures known to be transient: provider
// API throttling, HTTP 429 and 5xx answers, connection resets and
// refusals, timeouts of TLS handshakes and of network reads, temporary
// DNS failures, and an HTTP client that gave up retrying.
var DefaultTransientErrors = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(throttl(ed|ing)|rate exceeded|too many requests|request ?limit ?exceeded|slow ?down)\b`),
	regexp.MustCompile(`\b(429|500|502|503|504)\b[^\n]*\b(Too Many Requests|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out)\b`),
	regexp.MustCompile(`(?i)\b(status|status code|StatusCode|http)[: =]*(429|502|503|504)\b`),
	regexp.MustCompile(`(?i)connection reset by peer|connection refused|broken pipe|unexpected EOF`),
	regexp.MustCompile(`(?i)TLS handshake timeout|i/o timeout|net/http: timeout awaiting response headers|context deadline exceeded \(Client\.Timeout`),
	regexp.MustCompile(`(?i)temporary failure in name resolution`),
	// go-retryablehttp (the http backend, registries) gave up on one of
	// the above.
	regexp.MustCompile(`giving up after \d+ attempt\(s\)`),
	// Concurrent first inits of the pg backend race creating its schema,
	// table and sequence: PostgreSQL's catalog indexes say so, or the
	// loser of CREATE ... IF NOT EXISTS finds the backend's own relation
	// (its shared sequence, its table, its index) just made.
	regexp.MustCompile(`duplicate key value violates unique constraint "pg_(type_typname_nsp|class_relname_nsp|namespace_nspname)_index"`),
	regexp.MustCompile(`pq: relation "(global_states_id_seq|states|states_by_name)" already exists`),
}

// DefaultRetry is the policy used without WithRetry: two retries after
// about 5 and 10 seconds.
var DefaultRetry = RetryPolicy{Max: 2, Backoff: 5 * time.Second, MaxBackoff: 30 * time.Second}

func (p RetryPolicy) check() error {
	switch {
	case p.Max < 0:
		return fmt.Errorf("Max %d, want >= 0", p.Max)
	case p.Backoff < 0 || p.MaxBackoff < 0:
		return errors.New("negative backoff")
	}
	for i, re := range p.Patterns {
		if re == nil {
			return fmt.Errorf("pattern %d is nil", i)
		}
	}
	return nil
}

// policy is p as internal/retry runs it: the patterns that make a
// failure transient are DefaultTransientErrors, unless NoDefaults, then
// Patterns.
func (p RetryPolicy) policy() retry.Policy {
	patterns := p.Patterns
	if !p.NoDefaults {
		patterns = append(slices.Clone(DefaultTransientErrors), p.Patterns...)
	}
	return retry.Policy{Max: p.Max, Backoff: p.Backoff, MaxBackoff: p.MaxBackoff, Patterns: patterns}
}
