package journal

import (
	"os"
	"os/user"
	"time"
)

// Who is the Who terraform writes into the lock info of a lock it takes
// from this process's user and host, and the host.
func Who() (who, host string) {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ = os.Hostname()
	return name + "@" + host, host
}

// Lock is what LeftBy needs of a state lock: its ID, who holds it and
// since when, as terraform reports them.
type Lock struct {
	ID      string
	Who     string
	Created time.Time
}

// LeftBy returns the crashed run that provably left lock l: same user
// and host as this process (so the same terraform identity), created
// while that run's last terraform could have taken it: no earlier than
// (within clockSlack) its start, no later than lockTakeWindow after it
// (terraform takes its state lock right as it starts), and never after
// the engine's last sign of life (lastAlive). So a lock a live process
// of the same user and host took once the crashed run's engine was gone
// (another checkout, a second CI job, tofu by hand, even seconds after
// the crash) is never taken for the crashed run's; nor is one when the
// journal proves no sign of life at all. A lock's time is taken at the
// latest instant it can stand for (see latestCreation). nil when none
// did, when the run recorded no terraform, or when l does not say who
// holds it and since when.
func LeftBy(l Lock, crashed []Run) *Run {
	if l.ID == "" || l.Who == "" || l.Created.IsZero() {
		return nil
	}
	who, host := Who()
	created := latestCreation(l.Created)
	for i := range crashed {
		c := &crashed[i]
		e := c.Engine
		if e == nil || e.Began.IsZero() {
			continue
		}
		end := e.lastAlive()
		if take := e.Began.Add(lockTakeWindow); take.Before(end) {
			end = take
		}
		if c.Who == who && c.Host == host && l.Who == who &&
			!l.Created.Before(c.Started) && !l.Created.Before(e.Began.Add(-clockSlack)) &&
			!created.After(end) {
			return c
		}
	}
	return nil
}

// latestCreation is the latest instant a lock whose creation time reads
// t can have been created at. Terraform and OpenTofu write it to the
// nanosecond (RFC 3339 in the backend, Go's time.Time.String in the lock
// error, which drops trailing zeros); a time written to the second, or
// the millisecond, stands for the whole second, or millisecond, so its
// end is what is compared with the engine's last sign of life: a lock
// taken after the engine was gone is never let in by rounding.
func latestCreation(t time.Time) time.Time {
	unit := time.Nanosecond
	for unit < time.Second && t.Nanosecond()%int(10*unit) == 0 {
		unit *= 10
	}
	return t.Add(unit - time.Nanosecond)
}

// lockTakeWindow bounds how long after it starts a terraform of the
// runner's takes its state lock (it loads the configuration, the backend
// and the providers first; the runner passes -lock-timeout=0 and retries
// whole commands, each a new process); clockSlack allows for the lock's
// time being taken on terraform's side of the same clock, before the
// runner noted the start (only the window's start: its end is a proven
// sign of life, with no slack).
const (
	lockTakeWindow = 2 * time.Minute
	clockSlack     = time.Second
)
