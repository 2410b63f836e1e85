package stress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
	"github.com/tfisolate/tfisolate/pluginc"
	"github.com/tfisolate/tfisolate/runner"
	"github.com/tfisolate/tfisolate/workdir"
)

// soakHostEnv carries, as JSON, the soakHostConfig of a test binary
// re-executed in the soakHostRole as a soak host (see runSoakHost): a Go
// program using runner, workdir and pluginc, as an operator's tool would,
// that TestSoak starts, kills and starts again.
const soakHostEnv = "TFISOLATE_SOAK_HOST"

// soakStack is the stack of every soak instance.
const soakStack = "soak"

// soakInstance is the instance path of the n-th soak instance (1-based).
func soakInstance(n int) string { return fmt.Sprintf("item/inst-%02d", n) }

// soakComponent is the soak's component. Every apply writes the state
// several times (three items and terraform_data.gen are updated in place,
// churn is replaced), and spends var.latency_seconds in churn's
// provisioner between two of those writes, so faults land before, between
// and during state writes. What the soak checks of it:
//
//   - tfitest_item.fixed, terraform_data.anchor and terraform_data.gen are
//     created once and never replaced (fixed names and inputs; only
//     in-place updates): once recorded untainted, each keeps its id and
//     stays in the state. anchor's and gen's ids are random, so a second
//     creation shows.
//   - terraform_data.churn is replaced by every run on purpose (its
//     triggers_replace is the run's generation) and so is not checked for
//     identity.
const soakComponent = `terraform {
  required_providers {
    tfitest = {
      source  = "registry.tfisolate.test/tfisolate/tfitest"
      version = "~> 1.0"
    }
  }
}

variable "name" { type = string }
variable "gen" { type = string }
variable "latency_seconds" { type = number }

resource "tfitest_item" "fixed" {
  count   = 3
  name    = "${var.name}-${count.index}"
  payload = var.gen
}

resource "terraform_data" "anchor" {
  input = var.name
  provisioner "local-exec" {
    command = "sleep ${var.latency_seconds}"
  }
}

resource "terraform_data" "gen" {
  input      = var.gen
  depends_on = [tfitest_item.fixed, terraform_data.anchor]
}

resource "terraform_data" "churn" {
  triggers_replace = var.gen
  depends_on       = [terraform_data.gen]
  provisioner "local-exec" {
    command = "sleep ${var.latency_seconds}"
  }
}
`

// soakHostConfig tells a soak host what to apply; it travels as JSON in
// soakHostEnv.
type soakHostConfig struct {
	Root, Cache, Source string
	// The registry the cache downloads from: the parent's loopback server.
	RegistryHost, RegistryAddr, CAFile string
	Engines                            map[string]string // engine kind -> binary
	Units                              []soakUnit
	Gen                                string // this host's generation: every unit's var.gen
	Latency                            time.Duration
	Parallelism                        int
	LockTimeout                        time.Duration
	// CrashedEngineWait is runner.WithCrashedEngineWait; negative: the
	// default.
	CrashedEngineWait time.Duration
	LogDir            string
}

// soakUnit is one instance a host applies, with the engine it is applied
// with (always the same for an instance).
type soakUnit struct {
	N      int
	Engine string
}

// soakLine is one line a soak host writes on stdout: an event while its
// Runs go on, then its outcome last.
type soakLine struct {
	Unit  string       `json:",omitempty"`
	Phase string       `json:",omitempty"`
	Done  *soakOutcome `json:",omitempty"`
}

type soakOutcome struct {
	Results []soakResult
	RunErrs []string
}

// soakResult is a unit's outcome. Kind classifies its error by the
// runner's sentinels: "damaged" (ErrStateDamaged), "locked"
// (ErrStateLocked), "engine-running" (ErrEngineRunning), or "other".
type soakResult struct {
	Unit, Status, Kind, Err, Log string
	StateLock                    bool // a state lock was met
	Crashed                      int  // crashed runs of the instance found
	Waited                       time.Duration
}

func runSoakHost() error {
	var cfg soakHostConfig
	if err := json.Unmarshal([]byte(os.Getenv(soakHostEnv)), &cfg); err != nil {
		return fmt.Errorf("bad soak host config: %w", err)
	}
	out, err := soakApply(cfg)
	if err != nil {
		return err
	}
	for _, r := range out.Results {
		if r.Status != runner.Succeeded.String() {
			return fmt.Errorf("unit %s %s", r.Unit, r.Status)
		}
	}
	return nil
}

// soakApply applies cfg.Units, one Run per engine, the Runs side by side,
// until done or until SIGINT or SIGTERM (what a CLI does on Ctrl-C or a
// CI cancel: the runs are cancelled, terraform interrupted).
func soakApply(cfg soakHostConfig) (*soakOutcome, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ca, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	hc, err := testregistry.NewClient(cfg.RegistryHost, cfg.RegistryAddr, ca)
	if err != nil {
		return nil, err
	}
	cache, err := pluginc.Open(cfg.Cache, pluginc.WithSource(pluginc.Registry()), pluginc.WithHTTPClient(hc))
	if err != nil {
		return nil, err
	}
	wds, err := workdir.New(cfg.Root)
	if err != nil {
		return nil, err
	}
	// One Encode is one write(2) of one line; the two Runs' event
	// callbacks take turns.
	var encMu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	emit := func(l soakLine) {
		encMu.Lock()
		defer encMu.Unlock()
		_ = enc.Encode(l)
	}
	byEngine := map[string][]runner.Unit{}
	for _, u := range cfg.Units {
		byEngine[u.Engine] = append(byEngine[u.Engine], runner.Unit{Workdir: workdir.Spec{
			Stack: soakStack, Instance: soakInstance(u.N), Source: cfg.Source, Files: soakFiles(u.N, cfg.Gen, cfg.Latency),
		}})
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		res = &soakOutcome{}
	)
	for kind, units := range byEngine {
		opts := []runner.Option{
			runner.WithWorkdirs(wds),
			runner.WithPluginCache(cache),
			runner.WithTerraform(cfg.Engines[kind]),
			runner.WithParallelism(cfg.Parallelism),
			runner.WithLockTimeout(cfg.LockTimeout),
			runner.WithLogDir(filepath.Join(cfg.LogDir, kind)),
			runner.WithEvents(func(e runner.Event) { emit(soakLine{Unit: e.Unit, Phase: e.Phase.String()}) }),
		}
		if cfg.CrashedEngineWait >= 0 {
			opts = append(opts, runner.WithCrashedEngineWait(cfg.CrashedEngineWait))
		}
		r, err := runner.New(opts...)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, runErr := r.Run(ctx, runner.Apply, units...)
			mu.Lock()
			defer mu.Unlock()
			if runErr != nil {
				res.RunErrs = append(res.RunErrs, runErr.Error())
			}
			if rep == nil {
				return
			}
			for _, u := range rep.Results {
				sr := soakResult{Unit: u.Unit, Status: u.Status.String(), Log: u.Log, StateLock: u.StateLock != nil, Crashed: len(u.Crashed)}
				for _, c := range u.Crashed {
					sr.Waited += c.Waited
				}
				if u.Err != nil {
					sr.Err = u.Err.Error()
					switch {
					case errors.Is(u.Err, runner.ErrStateDamaged):
						sr.Kind = "damaged"
					case errors.Is(u.Err, runner.ErrStateLocked):
						sr.Kind = "locked"
					case errors.Is(u.Err, runner.ErrEngineRunning):
						sr.Kind = "engine-running"
					default:
						sr.Kind = "other"
					}
				}
				res.Results = append(res.Results, sr)
			}
		}()
	}
	wg.Wait()
	emit(soakLine{Done: res})
	return res, nil
}

// soakFiles are the generated files of instance n in a run of generation
// gen: local state in the working dir, and the variables.
func soakFiles(n int, gen string, latency time.Duration) map[string][]byte {
	vars, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("soak-%02d", n), "gen": gen, "latency_seconds": latency.Seconds()})
	return map[string][]byte{
		"backend.tf.json":            []byte(`{"terraform": {"backend": {"local": {}}}}`),
		"terraform.auto.tfvars.json": vars,
	}
}
