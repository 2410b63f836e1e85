package childproc_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

func TestMain(m *testing.M) { childproc.Main(m, child) }

// child is what a child of these tests does, by role.
func child(role string) error {
	in := bufio.NewReader(os.Stdin)
	switch role {
	case "echo": // says ready, then echoes each stdin line until EOF
		fmt.Println("ready")
		for {
			l, err := in.ReadString('\n')
			if errors.Is(err, io.EOF) {
				fmt.Println("bye")
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Print("echo " + l)
		}
	case "env": // what a process this child starts sees of Env
		fmt.Printf("env=%q extra=%q\n", os.Getenv(childproc.Env), os.Getenv("CHILDPROC_EXTRA"))
		return nil
	case "hold": // says ready, then blocks until killed
		fmt.Println("ready")
		select {}
	case "append": // appends its PID to a file, many times
		for range 200 {
			if err := childproc.AppendLine(os.Getenv("CHILDPROC_FILE"), fmt.Sprint(os.Getpid())); err != nil {
				return err
			}
		}
		return nil
	case "many": // prints more lines than any pipe or queue holds, then exits
		for i := range 20000 {
			fmt.Println("line", i)
		}
		return nil
	case "fail":
		return errors.New("the role failed")
	}
	return fmt.Errorf("unknown role %q", role)
}

// The child runs its role, not the tests, and talks line by line.
func TestLines(t *testing.T) {
	p := childproc.Start(t, "echo")
	p.Expect(t, "ready")
	_, err := io.WriteString(p.Stdin, "one\ntwo\n")
	require.NoError(t, err)
	require.Equal(t, "echo one", p.Next(t))
	p.WaitLine(t, "two")
	require.NoError(t, p.Stdin.Close())
	p.Expect(t, "bye")
	require.NoError(t, p.Wait())
	require.Equal(t, "ready\necho one\necho two\nbye\n", p.Output())
	require.NotContains(t, p.Output(), "PASS", "the child ran the tests")
}

// A role that fails exits 1 with the error on stderr.
func TestFailingRole(t *testing.T) {
	var stderr strings.Builder
	p := childproc.Start(t, "fail", childproc.WithStderr(&stderr))
	err := p.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode())
	require.Contains(t, stderr.String(), "child: the role failed")
}

// The child gets the extra environment, and Env is gone from its own
// environment, so what it starts is no child.
func TestEnvironment(t *testing.T) {
	p := childproc.Start(t, "env", childproc.WithEnv("CHILDPROC_EXTRA=x"))
	p.Expect(t, `env="" extra="x"`)
	require.NoError(t, p.Wait())
}

// Kill ends a child that would run forever, and says it was killed.
func TestKill(t *testing.T) {
	p := childproc.Start(t, "hold")
	p.Expect(t, "ready")
	require.Error(t, p.Kill())
	require.Error(t, p.Kill(), "a second Kill is harmless and says the same")
}

// A child that outlives its timeout is killed.
func TestTimeout(t *testing.T) {
	p := childproc.Start(t, "hold", childproc.WithTimeout(500*time.Millisecond))
	p.Expect(t, "ready")
	require.Error(t, p.Wait())
	require.False(t, p.Cmd.ProcessState.Success())
}

// Children appending to one file never lose or tear a line.
func TestAppendLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "log")
	var kids []*childproc.Proc
	for range 3 {
		kids = append(kids, childproc.Start(t, "append", childproc.WithEnv("CHILDPROC_FILE="+file)))
	}
	want := map[string]int{}
	for _, k := range kids {
		require.NoError(t, k.Wait())
		want[fmt.Sprint(k.PID())] = 200
	}
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	got := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		got[l]++
	}
	require.Equal(t, want, got)
}

// A child the test does not read from still runs to its end: Done closes
// with every line kept, and a goroutine other than the test's reads them
// with ReadLine.
func TestDoneWithoutReading(t *testing.T) {
	p := childproc.Start(t, "many")
	<-p.Done() // bounded by the child's timeout
	require.NoError(t, p.Wait())
	lines := strings.Split(strings.TrimSuffix(p.Output(), "\n"), "\n")
	require.Len(t, lines, 20000)
	require.Equal(t, "line 19999", lines[19999])

	n := make(chan int)
	go func() {
		seen := 0
		for {
			if _, ok := p.ReadLine(); !ok {
				n <- seen
				return
			}
			seen++
		}
	}()
	require.Equal(t, 20000, <-n, "ReadLine yields every line once, then ends")
}
