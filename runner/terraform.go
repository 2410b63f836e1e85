package runner

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfisolate/tfisolate/internal/tfcmd"
)

// Every terraform process the runner starts, custom steps' Handle.Exec
// included, runs through internal/tfcmd: this file maps a unit onto it.
// (Custom steps' Handle.Terraform is terraform-exec's own, see Handle.)

// engineDir is where an instance's data dir holds its engines' stdout and
// stderr files (tfcmd.OutputDir); journal.SweepOutputs keeps those a crashed run names.
const engineDir = tfcmd.OutputDir

// newTF returns the unit's way to run terraform processes in dir.
func (x *unitRun) newTF(dir string, env []string) *tfcmd.Process {
	t := &tfcmd.Process{Path: x.rs.eng.Path, Dir: dir, Env: env, Grace: x.rs.cfg.grace, Kill: x.rs.kill,
		OutDir: filepath.Join(x.w.DataDir, engineDir), Started: x.engineStarted, Gate: x.waitForCore, Host: &x.rs.host, Follow: &x.rs.follow, Share: x.rs.share,
		Stream: func() (io.Writer, func()) { w := x.out.stream(); return w, w.flush },
		Note:   x.out.note}
	x.tfs = append(x.tfs, t)
	return t
}

// killed reports whether a terraform of this unit had to be killed.
func (x *unitRun) killed() bool {
	return slices.ContainsFunc(x.tfs, (*tfcmd.Process).Killed)
}

// killedSign is the last sign of life of the last of this unit's
// terraform processes that had to be killed (tfcmd's KilledSign); zero
// when none was.
func (x *unitRun) killedSign() time.Time {
	var t time.Time
	for _, p := range x.tfs {
		if s := p.KilledSign(); s.After(t) {
			t = s
		}
	}
	return t
}

// summary is the change summary of r as a Result gives it; nil when
// terraform gave none.
func summary(r *tfcmd.Result) *ChangeSummary {
	if r == nil || r.Changes == nil {
		return nil
	}
	c := r.Changes
	return &ChangeSummary{Add: c.Add, Change: c.Change, Destroy: c.Remove, Import: c.Import}
}

// outputValues are terraform's outputs as a Result gives them; nil when
// terraform gave none.
func outputValues(outs map[string]tfcmd.Output) map[string]OutputValue {
	if outs == nil {
		return nil
	}
	m := make(map[string]OutputValue, len(outs))
	for k, o := range outs {
		m[k] = OutputValue{Value: o.Value, Type: o.Type, Sensitive: o.Sensitive}
	}
	return m
}

// environ turns an environment map into the KEY=VALUE form exec takes,
// sorted so the order never depends on map iteration.
func environ(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// exists reports whether p exists.
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
