package runner

// The module fleet's children (issue 42 item 1): a module server process
// (ModuleServer over a store of its own, in front of the loopback
// registry, on loopback HTTPS) and runner processes, each a machine with
// its own workdir root and module store, fetching through the server.
// The tests are in modserver_unix_test.go.

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"time"

	"github.com/tfisolate/tfisolate/workdir"
)

const (
	modServerRole         = "module-server"
	modRunnerRole         = "module-runner"
	modServerURLPrefix    = "module-server-url: "
	modRunnerResultPrefix = "module-runner-result: "
)

type modServerConfig struct {
	Registry fleetRegistry
	Store    string
	CertFile string // where the server writes its certificate
	Token    string
}

type modRunnerConfig struct {
	TF, Root, Store, Server string
	Units                   []workdir.Spec
	Env                     map[string]string // every unit's
}

// modRunnerResult is the line a runner prints when its Run is over.
type modRunnerResult struct {
	Succeeded int
	Errs      []string
	Versions  []string // each unit's "version" output
	Greetings []string // each unit's "greeting" output (the git module's)
	Warnings  []string // Report.Warnings
	Fallbacks []string // module-fallback events: their ModuleFallback
}

// modServerChild serves a module store filled from the loopback registry
// with ModuleServer over loopback HTTPS, prints its URL and serves until
// its stdin closes.
func modServerChild() error {
	var cfg modServerConfig
	if err := readChildConfig(&cfg); err != nil {
		return err
	}
	ca, err := os.ReadFile(cfg.Registry.CAFile)
	if err != nil {
		return err
	}
	hc, err := fleetClient(&cfg.Registry, ca)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := ModuleServer(cfg.Store, WithServerToken(cfg.Token), WithServerHTTPClient(hc), WithServerLogger(log))
	if err != nil {
		return err
	}
	srv := httptest.NewTLSServer(h)
	defer srv.Close()
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(cfg.CertFile, cert, 0o644); err != nil {
		return err
	}
	fmt.Println(modServerURLPrefix + srv.URL + "/")
	_, _ = io.Copy(io.Discard, os.Stdin) // serve until the parent lets go
	return nil
}

// modRunnerChild applies its units, all at once, with a workdir root and
// module store of its own and the module server, once its stdin closes
// (the start barrier), and prints a modRunnerResult.
func modRunnerChild() error {
	var cfg modRunnerConfig
	if err := readChildConfig(&cfg); err != nil {
		return err
	}
	wd, err := workdir.New(cfg.Root)
	if err != nil {
		return err
	}
	var res modRunnerResult
	r, err := New(WithWorkdirs(wd), WithTerraform(cfg.TF), WithModuleStore(cfg.Store), WithModuleServer(cfg.Server),
		WithParallelism(len(cfg.Units)), WithEvents(func(e Event) {
			if e.ModuleFallback != nil {
				res.Fallbacks = append(res.Fallbacks, e.ModuleFallback.String())
			}
		}))
	if err != nil {
		return err
	}
	units := make([]Unit, len(cfg.Units))
	for i, s := range cfg.Units {
		units[i] = Unit{Workdir: s, Env: cfg.Env}
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // start barrier: the parent closes stdin
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := r.Run(ctx, Apply, units...)
	if rep == nil {
		return fmt.Errorf("invalid input: %v", err)
	}
	res.Warnings = rep.Warnings
	for _, u := range rep.Results {
		if u.Status != Succeeded {
			res.Errs = append(res.Errs, fmt.Sprintf("%s: %s: %v", u.Unit, u.Status, u.Err))
			continue
		}
		res.Succeeded++
		var v string
		if o, ok := u.Outputs["version"]; ok {
			_ = json.Unmarshal(o.Value, &v)
		}
		res.Versions = append(res.Versions, v)
		var g string
		if o, ok := u.Outputs["greeting"]; ok {
			_ = json.Unmarshal(o.Value, &g)
		}
		res.Greetings = append(res.Greetings, g)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Printf("\n%s%s\n", modRunnerResultPrefix, b)
	return nil
}
