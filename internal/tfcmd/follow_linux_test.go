package tfcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sink is an io.Writer a test can wait on: each write leaves a token.
type sink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func newSink() *sink { return &sink{wrote: make(chan struct{}, 1)} }

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits, at most a bound, until the sink holds want.
func (s *sink) waitFor(t *testing.T, want string) {
	t.Helper()
	bound := time.After(30 * time.Second)
	for s.String() != want {
		select {
		case <-s.wrote:
		case <-bound:
			t.Fatalf("the sink holds %q, want %q", s.String(), want)
		}
	}
}

// engineFile is an engine's output file as newEngineOutput makes it: the
// writer's end and the reader's.
func engineFile(t *testing.T, dir, name string) (w, r *os.File) {
	t.Helper()
	w, err := os.Create(filepath.Join(dir, name))
	require.NoError(t, err)
	r, err = os.Open(w.Name())
	require.NoError(t, err)
	t.Cleanup(func() { w.Close(); r.Close() })
	return w, r
}

// inotifyInstances counts this process's open inotify instances.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// TestFollowerWakesEachFile: files followed through one Follower are
// copied as they are written, each to its own writer and only there;
// stop copies what is left.
func TestFollowerWakesEachFile(t *testing.T) {
	dir := t.TempDir()
	var fl Follower
	defer fl.Close()
	aw, ar := engineFile(t, dir, "a.out")
	bw, br := engineFile(t, dir, "b.out")
	as, bs := newSink(), newSink()
	stopA := follow(ar, as, &fl)
	stopB := follow(br, bs, &fl)

	_, err := aw.WriteString("a1\n")
	require.NoError(t, err)
	as.waitFor(t, "a1\n")
	_, err = bw.WriteString("b1\n")
	require.NoError(t, err)
	bs.waitFor(t, "b1\n")
	require.Equal(t, "a1\n", as.String())

	_, err = aw.WriteString("a2\n")
	require.NoError(t, err)
	stopA()
	require.Equal(t, "a1\na2\n", as.String(), "stop copies what is left")
	_, err = bw.WriteString("b2\n")
	require.NoError(t, err)
	bs.waitFor(t, "b1\nb2\n")
	stopB()
}

// TestFollowerOneInstance: a Follower keeps one inotify instance however
// many files it follows one after another (an instance closed per file
// is the kernel's wait this type exists to avoid), and Close ends it; a
// file followed after Close is still copied whole by its stop.
func TestFollowerOneInstance(t *testing.T) {
	dir := t.TempDir()
	before := inotifyInstances(t)
	var fl Follower
	for i := range 20 {
		w, r := engineFile(t, dir, "out"+string(rune('a'+i)))
		s := newSink()
		stop := follow(r, s, &fl)
		_, err := w.WriteString("line\n")
		require.NoError(t, err)
		s.waitFor(t, "line\n")
		stop()
		require.Equal(t, before+1, inotifyInstances(t), "after file %d", i)
	}
	fl.Close()
	require.Equal(t, before, inotifyInstances(t))

	w, r := engineFile(t, dir, "late.out")
	s := newSink()
	stop := follow(r, s, &fl)
	_, err := w.WriteString("late\n")
	require.NoError(t, err)
	stop()
	require.Equal(t, "late\n", s.String())
	require.Equal(t, before, inotifyInstances(t))
}
