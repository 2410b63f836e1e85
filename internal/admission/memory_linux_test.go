package admission

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Run measures the processes an attempt hands to Track, and Save
// records the peak, so the next Run's gate expects it.
func TestMemoryRunMeasuresAndRecordsThePeak(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat to measure:", err)
	}
	path := filepath.Join(t.TempDir(), "record.json")
	units := []Unit{{ID: "u", Source: "/src/u"}}
	m := NewMemory(MemoryConfig{Budget: -1, Record: path, Engine: "terraform", Class: ClassPlan, Units: units})
	use, err := m.Run(context.Background(), 0, func(ctx context.Context, i int) error {
		cmd := exec.Command(cat) // runs until its stdin closes
		in, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		// Once cat has echoed a line, it has run: its pages are resident.
		if _, err := in.Write([]byte("x\n")); err != nil {
			return err
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			return err
		}
		m.Track(i, cmd.Process.Pid) // samples cat at once, as it waits for more
		in.Close()
		return cmd.Wait()
	})
	require.NoError(t, err)
	require.Positive(t, use.Peak, "cat's resident memory")
	require.False(t, use.OutOfMemory)
	m.Save()

	m = NewMemory(MemoryConfig{Budget: -1, Record: path, Engine: "terraform", Class: ClassApply, Units: units})
	got, known := m.expected(0, m.key(0))
	require.True(t, known, "the next Run knows the component")
	require.Equal(t, use.Peak, got, "at the peak measured (plan's, the heaviest known)")
}
