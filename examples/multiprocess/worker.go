package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// workerEnv carries a worker's config (JSON). Its presence is what makes a
// process a worker, both for this binary and for the test binary (its
// TestMain looks for it), so no flag has to get past the test flags.
const workerEnv = "TFISOLATE_EXAMPLE_MULTIPROCESS_WORKER"

// workerConfig is everything a worker needs from the parent.
type workerConfig struct {
	Process     int            `json:"process"`
	Terraform   string         `json:"terraform"`
	Source      string         `json:"source"`
	Workdirs    string         `json:"workdirs"`
	Cache       string         `json:"cache"`
	LogDir      string         `json:"log_dir"`
	Registry    registryAccess `json:"registry"` // offline.go's loopback registry
	Instances   []int          `json:"instances"`
	Latency     time.Duration  `json:"latency"`
	Parallelism int            `json:"parallelism"`
}

// procResult is what a worker reports on stdout, as its last line.
type procResult struct {
	Process int `json:"process"`
	PID     int `json:"pid"`
	// Report is the runner's report, in its documented JSON form.
	Report *runner.Report `json:"report,omitempty"`
	// Spans are, by unit ID, when each unit held its instance lock.
	Spans map[string]span `json:"spans,omitempty"`
	Cache pluginc.Stats   `json:"cache"`
	Error string          `json:"error,omitempty"`
}

// span is when a unit got its workdir (instance lock held) and when
// terraform apply began: both happen while the lock is held, so for one
// instance the [Locked, Applied] spans of different processes never
// overlap. The runner's events give the times.
type span struct {
	Locked  time.Time `json:"locked"`
	Applied time.Time `json:"applied"`
}

// worker applies its instances with the shared cache and workdir root,
// writing progress to stderr and its result as one JSON line to stdout.
func worker(ctx context.Context, cfgJSON string, stdout, stderr io.Writer) error {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		return fmt.Errorf("worker config in %s: %w", workerEnv, err)
	}
	res, err := applyInstances(ctx, cfg, stderr)
	if err != nil {
		res.Error = err.Error()
	}
	if jerr := json.NewEncoder(stdout).Encode(res); jerr != nil {
		return jerr
	}
	return err
}

func applyInstances(ctx context.Context, cfg workerConfig, stderr io.Writer) (*procResult, error) {
	res := &procResult{Process: cfg.Process, PID: os.Getpid()}
	log := slog.New(&shownHandler{slog.NewTextHandler(stderr, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
				return slog.Attr{}
			}
			return a
		},
	})})
	registry, err := cfg.Registry.cacheOptions() // offline.go; yours: none
	if err != nil {
		return res, err
	}
	cache, err := pluginc.Open(cfg.Cache, append(registry, pluginc.WithLogger(log))...)
	if err != nil {
		return res, err
	}
	wds, err := workdir.New(cfg.Workdirs, workdir.WithLogger(log))
	if err != nil {
		return res, err
	}

	var mu sync.Mutex
	res.Spans = map[string]span{}
	events := func(ev runner.Event) {
		mu.Lock()
		defer mu.Unlock()
		sp := res.Spans[ev.Unit]
		switch ev.Phase {
		case runner.PhasePrepare:
			fmt.Fprintf(stderr, "start %s\n", ev.Unit)
		case runner.PhaseInit:
			sp.Locked = ev.Time
			res.Spans[ev.Unit] = sp
		case runner.PhaseApply:
			sp.Applied = ev.Time
			res.Spans[ev.Unit] = sp
		case runner.PhaseDone:
			fmt.Fprintf(stderr, "end   %s %s\n", ev.Unit, ev.Status)
		}
	}
	r, err := runner.New(
		runner.WithWorkdirs(wds),
		runner.WithPluginCache(cache),
		runner.WithTerraform(cfg.Terraform),
		runner.WithParallelism(cfg.Parallelism),
		runner.WithLogDir(cfg.LogDir),
		runner.WithEvents(events),
		runner.WithLogger(log),
	)
	if err != nil {
		return res, err
	}
	units := make([]runner.Unit, len(cfg.Instances))
	for k, i := range cfg.Instances {
		units[k] = cluster(i, cfg.Source, cfg.Latency)
	}
	rep, runErr := r.Run(ctx, runner.Apply, units...)
	res.Cache = cache.Stats()
	res.Report = rep
	return res, runErr
}

// shownHandler passes on only the records this example is about: lock
// waits and the provider download, as they happen.
type shownHandler struct{ slog.Handler }

var shown = map[string]bool{
	"waiting for instance lock": true,
	"downloading provider":      true,
	"installed provider":        true,
}

func (h *shownHandler) Handle(ctx context.Context, r slog.Record) error {
	if !shown[r.Message] {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *shownHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &shownHandler{h.Handler.WithAttrs(as)}
}

func (h *shownHandler) WithGroup(name string) slog.Handler {
	return &shownHandler{h.Handler.WithGroup(name)}
}
