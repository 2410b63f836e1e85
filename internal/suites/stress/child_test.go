package stress

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// The roles a test re-executes this binary in (see childproc).
const (
	applyRole    = "apply"     // a runner process applying a childConfig
	soakHostRole = "soak-host" // a soak host (see soakHostEnv)
)

// childConfigEnv carries an apply child's childConfig, as JSON.
const childConfigEnv = "TFISOLATE_STRESS_CHILD_CONFIG"

// childTimeout bounds a runner process past the tests' own bounds: it
// only keeps a broken test from hanging.
const childTimeout = 10 * time.Minute

// child is the body of a re-executed test binary, by role.
func child(role string) error {
	switch role {
	case applyRole:
		var cfg childConfig
		if err := json.Unmarshal([]byte(os.Getenv(childConfigEnv)), &cfg); err != nil {
			return fmt.Errorf("bad child config: %w", err)
		}
		return applyAsChild(cfg)
	case soakHostRole:
		return runSoakHost()
	}
	return fmt.Errorf("unknown child role %q", role)
}

// childConfig tells a runner process what to apply; it travels as JSON in
// the childConfigEnv variable.
type childConfig struct {
	TF, Root, Cache, Source string
	// The registry the cache downloads from: the parent's loopback server.
	RegistryHost, RegistryAddr, CAFile string
	Instances                          []int // demo instance numbers, 1-based
	Parallelism                        int
	Latency, LockTimeout               time.Duration
	LogDir                             string // empty: the runner's default, in each data dir
}

// message is one line a child writes on stdout: a runner event while the
// run goes on, then its outcome last.
type message struct {
	Unit   string       `json:",omitempty"`
	Phase  string       `json:",omitempty"`
	Time   time.Time    `json:",omitzero"` // wall clock: comparable across processes
	Status string       `json:",omitempty"`
	Err    string       `json:",omitempty"`
	Done   *childResult `json:",omitempty"`
}

type childResult struct {
	Results   []unitResult
	Downloads int64 // packages this process downloaded (pluginc Stats)
	RunErr    string
}

type unitResult struct {
	Unit, Status, Err, Log string
	LockWait               time.Duration
}

func applyAsChild(cfg childConfig) error {
	ca, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return err
	}
	hc, err := testregistry.NewClient(cfg.RegistryHost, cfg.RegistryAddr, ca)
	if err != nil {
		return err
	}
	cache, err := pluginc.Open(cfg.Cache, pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(hc))
	if err != nil {
		return err
	}
	wds, err := workdir.New(cfg.Root)
	if err != nil {
		return err
	}
	// Each event is one Encode, so one write(2) of one line: the parent
	// can act on it (and kill us) the moment it arrives.
	enc := json.NewEncoder(os.Stdout)
	opts := []runner.Option{}
	if cfg.LogDir != "" {
		opts = append(opts, runner.WithLogDir(cfg.LogDir))
	}
	r, err := runner.New(append(opts,
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(cache),
		runner.WithTerraform(cfg.TF),
		runner.WithParallelism(cfg.Parallelism),
		runner.WithLockTimeout(cfg.LockTimeout),
		runner.WithEvents(func(e runner.Event) {
			m := message{Unit: e.Unit, Phase: e.Phase.String(), Status: e.Status.String(), Time: e.Time.Round(0)}
			if e.Err != nil {
				m.Err = e.Err.Error()
			}
			_ = enc.Encode(m)
		}),
	)...)
	if err != nil {
		return err
	}
	units := make([]runner.Unit, len(cfg.Instances))
	for i, n := range cfg.Instances {
		units[i] = runner.Unit{Workdir: workdir.Spec{
			Stack: demo.Stack, Instance: demo.Instance(n), Source: cfg.Source, Files: demo.Files(n, cfg.Latency),
		}}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rep, runErr := r.Run(ctx, runner.Apply, units...)
	res := &childResult{Downloads: cache.Stats().Downloads}
	if runErr != nil {
		res.RunErr = runErr.Error()
	}
	if rep != nil {
		for _, u := range rep.Results {
			ur := unitResult{Unit: u.Unit, Status: u.Status.String(), Log: u.Log, LockWait: u.LockWait}
			if u.Err != nil {
				ur.Err = u.Err.Error()
			}
			res.Results = append(res.Results, ur)
		}
	}
	if err := enc.Encode(message{Done: res}); err != nil {
		return err
	}
	return runErr
}
