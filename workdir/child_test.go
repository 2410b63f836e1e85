package workdir

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// child is the body of a re-executed test binary (see childproc): its
// inputs come from the environment; it talks to the parent through stdin
// and stdout lines.
func child(role string) error {
	spec := Spec{Stack: os.Getenv("CHILD_STACK"), Instance: os.Getenv("CHILD_INSTANCE"), Source: os.Getenv("CHILD_SOURCE")}
	in := bufio.NewReader(os.Stdin)
	switch role {
	case "hold":
		m, err := New(os.Getenv("CHILD_ROOT"))
		if err != nil {
			return err
		}
		w, err := m.Prepare(context.Background(), spec)
		if err != nil {
			return err
		}
		fmt.Println("locked")
		_, _ = io.Copy(io.Discard, in) // hold until the parent closes stdin
		return w.Close()

	case "critical":
		m, err := New(os.Getenv("CHILD_ROOT"), WithLockRetry(time.Millisecond))
		if err != nil {
			return err
		}
		fmt.Println("ready")
		if _, err := in.ReadString('\n'); err != nil { // start gate
			return err
		}
		n, _ := strconv.Atoi(os.Getenv("CHILD_ITER"))
		logPath, counter := os.Getenv("CHILD_LOG"), os.Getenv("CHILD_COUNTER")
		for range n {
			w, err := m.Prepare(context.Background(), spec)
			if err != nil {
				return err
			}
			if err := childproc.AppendLine(logPath, fmt.Sprintf("start %d", os.Getpid())); err != nil {
				return err
			}
			// A read-modify-write that loses updates unless serialized.
			b, _ := os.ReadFile(counter)
			c, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if err := os.WriteFile(counter, []byte(strconv.Itoa(c+1)), 0o644); err != nil {
				return err
			}
			if err := childproc.AppendLine(logPath, fmt.Sprintf("end %d", os.Getpid())); err != nil {
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
		}
		return nil

	case "adopt":
		// Adopts the source's state into the spec's instance, stopping
		// right before the root's adoption lock until the parent says go,
		// and says how it ended on one line.
		m, err := New(os.Getenv("CHILD_ROOT"), WithLockRetry(time.Millisecond), withAdoptHook(func() {
			fmt.Println("at-lock")
			_, _ = in.ReadString('\n')
		}))
		if err != nil {
			return err
		}
		spec.AdoptState = true
		w, err := m.Prepare(context.Background(), spec)
		var ae *AdoptedError
		switch {
		case err == nil:
			fmt.Println("adopted")
			return w.Close()
		case errors.As(err, &ae) && errors.Is(err, ErrAdopted):
			fmt.Printf("refused owner=%s/%s %s\n", ae.Owner.Stack, ae.Owner.Instance, strings.ReplaceAll(err.Error(), "\n", " "))
			return nil
		}
		return err

	case "crash":
		stallAfter, _ := strconv.Atoi(os.Getenv("CHILD_STALL_AFTER"))
		written := 0
		m, err := New(os.Getenv("CHILD_ROOT"), withHook(func(string) {
			written++
			if written == stallAfter {
				fmt.Println("stalled")
				select {} // wait for SIGKILL in the middle of materializing
			}
		}))
		if err != nil {
			return err
		}
		_, err = m.Prepare(context.Background(), spec)
		return fmt.Errorf("prepare finished without stalling: %v", err)
	}
	return fmt.Errorf("unknown role %q", role)
}

// startChild starts a child in role on the workdir root and spec s, with
// extra environment.
func startChild(t *testing.T, role, root string, s Spec, extra ...string) *childproc.Proc {
	t.Helper()
	env := append([]string{"CHILD_ROOT=" + root, "CHILD_STACK=" + s.Stack, "CHILD_INSTANCE=" + s.Instance, "CHILD_SOURCE=" + s.Source}, extra...)
	return childproc.Start(t, role, childproc.WithEnv(env...))
}
