package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// Environment of a child process.
const (
	envLocks   = "STORE_CHILD_LOCKS"   // the locks dir
	envTmp     = "STORE_CHILD_TMP"     // the temp dir
	envKey     = "STORE_CHILD_KEY"     // the key it locks
	envCounter = "STORE_CHILD_COUNTER" // count role: the file it increments
	envTimes   = "STORE_CHILD_TIMES"   // count role: how many increments
)

// child is the body of a re-executed test binary: "count" increments
// a counter file under the key's lock, again and again; "hold" takes the
// key's lock, leaves a temp dir of the key, says "held" and keeps both
// until its stdin closes or it is killed.
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

// startChild starts the test binary again in role with env; childproc
// kills it when the test ends, and within a minute if it hangs.
func startChild(t *testing.T, role string, env ...string) *childproc.Proc {
	t.Helper()
	return childproc.Start(t, role, childproc.WithEnv(env...), childproc.WithTimeout(time.Minute))
}
