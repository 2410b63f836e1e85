package admission

import (
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"syscall"

	"github.com/tfisolate/tfisolate/internal/memory"
	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// pluginDiedRe matches what terraform and tofu say when a provider (or
// provisioner) plugin process ended under them: killed, its connection
// gone. A call in flight when the plugin is killed may also end as
// cancelled ("Request cancelled ... The plugin.(*GRPCProvider).X request
// was cancelled."), which is seen under memory pressure when the kernel
// kills a provider mid-call. A plugin killed while it starts, before
// go-plugin's handshake, fails the command with go-plugin's start-up
// errors instead (under "Failed to load plugin schemas" or "failed to
// instantiate provider"): its stdout closed with no handshake line
// ("Unrecognized remote plugin message", "Failed to read any lines from
// plugin's stdout") or it ended before terraform connected.
var pluginDiedRe = regexp.MustCompile(`(?i)plugin (did not respond|exited unexpectedly|crashed)|failed to respond to the plugin|rpc error: code = Unavailable|connection is shut down|error reading from server: EOF|plugin\S* request was cancelled|unrecognized remote plugin message|failed to read any lines from plugin's stdout|plugin exited before we could connect`)

// oomKilled tells a unit the kernel killed for memory. The kernel's
// OOM-kill count (of this process's memory cgroup, which the unit's
// processes share, else of the machine) must have risen while the unit
// ran, and its terraform failed; then the kill is the unit's when the
// victim was in its process trees:
//
//   - a process of its trees (a provider, a provisioner, terraform
//     itself) ended by a SIGKILL the caller did not send (victims:
//     memory.Watch.Killed, exact where the kernel tells, Linux 6.15 and
//     later, for every process a walk of the unit's trees found);
//   - or its terraform was ended by SIGKILL;
//   - or, for a victim no walk found (a provider killed as it started,
//     between two walks) or a kernel that does not tell, terraform said
//     that a plugin died under it or failed to start (pluginDiedRe).
//
// The count alone is not enough: it may be another unit's kill, and a
// SIGKILL alone may be anyone's. A unit whose context ended was
// interrupted (a Stop's kill is a SIGKILL too) and is never taken for
// one (Memory.Run). What remains inexact: the count says how many, not
// when, so a SIGKILL terraform itself sends a plugin that would not
// stop (go-plugin's, two seconds after asking) in the same unit run as
// an OOM kill elsewhere is taken for one, as is, where the victim is
// known only by terraform's message, a plugin of another unit that
// failed to start in the same moment.
func (m *Memory) oomKilled(i int, err error, before int64, victims []memory.Proc) bool {
	var te *tfcmd.Error
	if !errors.As(err, &te) {
		return false
	}
	after, ok := m.oomKills()
	if !ok || after <= before {
		return false
	}
	id := m.units[i].ID
	if len(victims) > 0 {
		for _, v := range victims {
			m.log.Debug("the kernel killed a process of the unit for memory", "unit", id, "pid", v.PID, "resident_bytes", v.RSS)
		}
		return true
	}
	var ee *exec.ExitError
	if errors.As(te.Err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			m.log.Debug("the kernel killed the unit's terraform for memory", "unit", id)
			return true
		}
	}
	// As the engine printed it, and with its whitespace folded: the
	// engine wraps a long message at any word.
	if pluginDiedRe.MatchString(te.Stderr) || pluginDiedRe.MatchString(strings.Join(strings.Fields(te.Stderr), " ")) {
		m.log.Debug("the kernel killed a plugin of the unit for memory, as terraform's error says", "unit", id)
		return true
	}
	return false
}
