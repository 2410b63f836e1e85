package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/workdir"
)

// childConfig tells a re-executed test binary what to run.
type childConfig struct {
	TF, Root, Cache string
	Spec            workdir.Spec
	Command         string // "apply" (the default) or "apply-plan"
}

// childResult is what a child prints on its last stdout line.
type childResult struct {
	Status   string
	LockWait int64
	Holder   *workdir.Holder // Result.InstanceLock
	Err      string
}

const childConfigEnv = "TFISOLATE_RUNNER_CHILD_CONFIG"

// runChild is the body of a re-executed test binary acting as another OS
// process; see TestMain.
func runChild(role string) int {
	if role == memoryChildRole {
		return runMemoryChild()
	}
	if role != "apply" {
		fmt.Printf("unknown child role %q\n", role)
		return 2
	}
	var cfg childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childConfigEnv)), &cfg); err != nil {
		fmt.Println("bad child config:", err)
		return 2
	}
	// The workdir manager logs to stderr, where the parent watches for the
	// moment this process starts waiting for the instance lock.
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	wd, err := workdir.New(cfg.Root, workdir.WithLogger(log))
	if err != nil {
		fmt.Println(err)
		return 2
	}
	cache, err := pluginc.Open(cfg.Cache)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	r, err := New(WithWorkdirs(wd), WithPluginCache(cache), WithTerraform(cfg.TF))
	if err != nil {
		fmt.Println(err)
		return 2
	}
	cmd := Apply
	if cfg.Command == ApplyPlan.String() {
		cmd = ApplyPlan
	}
	rep, err := r.Run(context.Background(), cmd, Unit{Workdir: cfg.Spec})
	res := childResult{}
	if rep != nil {
		res.Status = rep.Results[0].Status.String()
		res.LockWait = int64(rep.Results[0].LockWait)
		res.Holder = rep.Results[0].InstanceLock
	}
	if err != nil {
		res.Err = err.Error()
	}
	b, _ := json.Marshal(res)
	fmt.Printf("\n%s\n", b)
	if err != nil {
		return 1
	}
	return 0
}
