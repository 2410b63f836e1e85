// This file is the CI system of the simulation: it starts the fleet's
// machines as processes of this binary (the mirror, then each wave's
// apply jobs at once), runs the plan job, carries the artifact and prints
// what every machine says. In a real fleet your CI system does all this
// (docs/fleet.md, "A CI recipe"); main.go holds what each machine runs.

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// jobEnv and mirrorEnv carry a process's orders and make it an apply job
// or the mirror; keyEnv carries the bundles' HMAC key (a CI secret).
const (
	jobEnv    = "TFISOLATE_EXAMPLE_FLEET_JOB"
	mirrorEnv = "TFISOLATE_EXAMPLE_FLEET_MIRROR"
	keyEnv    = "TFISOLATE_EXAMPLE_FLEET_KEY"
)

// job is what the CI system tells a machine: its own root, the fleet's
// provider mirror, where the artifact is, its IDs; Env holds the
// stand-ins, the shared state backend's address among them.
type job struct {
	Root, Mirror, MirrorCert, Artifact string
	IDs                                []string
	Env                                *offline // offline.go's stand-ins
}

// runMachine is the machine whose orders the environment holds (the
// mirror or an apply job), or else the whole fleet (run).
func runMachine(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if spec, ok := os.LookupEnv(mirrorEnv); ok {
		return serveMirror(spec, stdin, stdout)
	}
	if spec, ok := os.LookupEnv(jobEnv); ok {
		return runApplyJob(ctx, spec, stdout)
	}
	return run(ctx, args, stdout)
}

// runApplyJob is the apply job whose orders spec holds, its key from
// keyEnv.
func runApplyJob(ctx context.Context, spec string, stdout io.Writer) error {
	var j job
	key, err := hex.DecodeString(os.Getenv(keyEnv))
	if jerr := json.Unmarshal([]byte(spec), &j); jerr != nil || j.Env == nil || err != nil || len(key) == 0 {
		return fmt.Errorf("want a job's JSON in %s and the plan key in hex in %s", jobEnv, keyEnv)
	}
	return applyJob(ctx, j, key, stdout)
}

// serveMirror is the mirror whose orders spec holds: its cache served on
// loopback, its URL printed, until stop closes.
func serveMirror(spec string, stop io.Reader, stdout io.Writer) error {
	var m job
	if err := json.Unmarshal([]byte(spec), &m); err != nil || m.Env == nil {
		return fmt.Errorf("want the mirror's JSON in %s: %v", mirrorEnv, err)
	}
	h, err := mirror(m)
	if err != nil {
		return err
	}
	url, closeMirror, err := serveTLS(h, m.MirrorCert) // offline.go
	if err != nil {
		return err
	}
	defer closeMirror()
	fmt.Fprintln(stdout, url)
	_, err = io.Copy(io.Discard, stop)
	return err
}

// run is the fleet: the mirror, the plan job, the artifact, the apply
// jobs wave by wave.
func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	rootFlag := fs.String("root", "", "where the machines' roots live (default: the user cache dir)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return fmt.Errorf("usage: fleet [-root DIR], not %q", args)
	}
	root, err := resolveRoot(*rootFlag)
	if err != nil {
		return err
	}
	stateDir := filepath.Join(root, "state")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	env, err := startOffline(ctx, root, stateDir)
	if err != nil {
		return err
	}
	defer env.close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	start, key := time.Now(), make([]byte, 32)
	_, _ = rand.Read(key) // never fails
	m := job{Root: filepath.Join(root, "mirror"), MirrorCert: env.MirrorCert,
		Artifact: filepath.Join(root, "a", "bundles"), Env: env}

	// The provider mirror, a machine of its own until the fleet is done.
	pid, stopMirror, err := startMirror(ctx, exe, &m)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopMirror()) }()
	fmt.Fprintf(stdout, "mirror: pid %d serves the provider cache at %s and the module store at %smodules/\n", pid, m.Mirror, m.Mirror)

	// The plan job, on machine A.
	m.Root = filepath.Join(root, "a")
	fan, err := planJob(ctx, m, key)
	if err != nil {
		return fmt.Errorf("plan job: %w", err)
	}
	matrix, _ := json.Marshal(fan) // a FanOutPlan always marshals
	fmt.Fprintf(stdout, "plan job: %d bundles; matrix %s\n", len(fleetUnits(env)), matrix)

	// The artifact: uploaded by the plan job, downloaded by the apply jobs.
	bundles := m.Artifact
	m.Artifact = filepath.Join(root, "artifact")
	if err := os.RemoveAll(m.Artifact); err != nil {
		return err
	}
	if err := errors.Join(os.Mkdir(m.Artifact, 0o700), os.CopyFS(m.Artifact, os.DirFS(bundles))); err != nil {
		return fmt.Errorf("artifact: %w", err)
	}

	// The apply jobs: wave after wave, a wave's jobs at once.
	for w, wave := range fan.Waves {
		if err := runWave(ctx, exe, m, key, w+1, wave.Jobs, start, stdout); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "fleet: every job succeeded, every state in %s; %d provider downloads upstream; %d module downloads upstream; %s\n",
		stateDir, env.downloads(), env.moduleDownloads(), time.Since(start).Round(time.Millisecond))
	return nil
}

// startMirror starts the mirror process and sets m.Mirror to the URL it
// serves at; stop ends it (closing its stdin) and waits for it.
func startMirror(ctx context.Context, exe string, m *job) (pid int, stop func() error, err error) {
	spec, _ := json.Marshal(m) // a job always marshals
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env, cmd.Stderr = append(os.Environ(), mirrorEnv+"="+string(spec)), os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return 0, nil, fmt.Errorf("start the mirror: %w", err)
	}
	stop = func() error { return errors.Join(in.Close(), cmd.Wait()) }
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return 0, nil, fmt.Errorf("the mirror said no URL: %w", errors.Join(err, stop()))
	}
	m.Mirror = strings.TrimSpace(url)
	return cmd.Process.Pid, stop, nil
}

// runWave runs wave w's jobs at once, each a process with its own root,
// and prints when each ran and what it said.
func runWave(ctx context.Context, exe string, m job, key []byte, w int, jobs [][]string, start time.Time, stdout io.Writer) error {
	out, errs, spans := make([]bytes.Buffer, len(jobs)), make([]error, len(jobs)), make([][2]time.Duration, len(jobs))
	var wg sync.WaitGroup
	fleetRoot := filepath.Dir(m.Root) // m is the plan job's, its root a dir of the fleet's
	for j, ids := range jobs {
		// Its own root, under the fleet's.
		m.Root, m.IDs = filepath.Join(fleetRoot, fmt.Sprintf("wave%d-job%d", w, j+1)), ids
		spec, _ := json.Marshal(m) // a job always marshals
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), jobEnv+"="+string(spec), keyEnv+"="+hex.EncodeToString(key))
		cmd.Stdout, cmd.Stderr = &out[j], &out[j]
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) } // terraform stops cleanly
		cmd.WaitDelay = time.Minute
		wg.Go(func() {
			spans[j][0] = time.Since(start)
			errs[j] = cmd.Run()
			spans[j][1] = time.Since(start)
		})
	}
	wg.Wait()
	for j, ids := range jobs {
		fmt.Fprintf(stdout, "wave %d job %d: %d units, ran %s-%s\n", w, j+1, len(ids), spans[j][0].Round(time.Millisecond), spans[j][1].Round(time.Millisecond))
		for line := range strings.Lines(out[j].String()) {
			fmt.Fprintf(stdout, "wave %d job %d: %s", w, j+1, line)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("wave %d: %w", w, err)
	}
	return nil
}
