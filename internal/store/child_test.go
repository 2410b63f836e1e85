package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Environment of a child process.
const (
	envLocks   = "STORE_CHILD_LOCKS"   // the locks dir
	envTmp     = "STORE_CHILD_TMP"     // the temp dir
	envKey     = "STORE_CHILD_KEY"     // the key it locks
	envCounter = "STORE_CHILD_COUNTER" // count role: the file it increments
	envTimes   = "STORE_CHILD_TIMES"   // count role: how many increments
)

// runChild is the body of a re-executed test binary: "count" increments
// a counter file under the key's lock, again and again; "hold" takes the
// key's lock, leaves a temp dir of the key, says "held" and keeps both
// until its stdin closes or it is killed.
func runChild(role string) int {
	if err := child(role); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

func child(role string) error {
	l := NewLocks(os.Getenv(envLocks), 0, time.Millisecond)
	key := os.Getenv(envKey)
	switch role {
	case "count":
		n, err := strconv.Atoi(os.Getenv(envTimes))
		if err != nil {
			return err
		}
		return countUnderLock(l, key, os.Getenv(envCounter), n)
	case "hold":
		unlock, err := l.Lock(context.Background(), key, nil)
		if err != nil {
			return err
		}
		defer unlock()
		if err := os.Mkdir(filepath.Join(os.Getenv(envTmp), TempPrefix(key)+".d"), 0o755); err != nil {
			return err
		}
		fmt.Println("held")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}

// countUnderLock adds 1 to the number in file n times, each time reading
// and writing it in separate steps under key's lock: without mutual
// exclusion, racing holders lose increments.
func countUnderLock(l *Locks, key, file string, n int) error {
	for range n {
		unlock, err := l.Lock(context.Background(), key, nil)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(file)
		if err != nil {
			unlock()
			return err
		}
		v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		runtime.Gosched() // widen the window a lost update needs
		err = os.WriteFile(file, []byte(strconv.Itoa(v+1)), 0o644)
		unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// proc is a child process started by a test.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	done  chan error
}

// startChild starts the test binary again in role with env, and makes
// sure it is gone when the test ends.
func startChild(t *testing.T, role string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, childEnv+"="+role)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout), done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// expect reads the child's next line, which must be want.
func (p *proc) expect(t *testing.T, want string) {
	t.Helper()
	require.True(t, p.out.Scan(), "the child ended before saying %q", want)
	require.Equal(t, want, p.out.Text())
}

// wait waits for the child to end, for at most a minute.
func (p *proc) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return err
	case <-time.After(time.Minute):
		t.Fatal("the child did not end within a minute")
		return nil
	}
}
