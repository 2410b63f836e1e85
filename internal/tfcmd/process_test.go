package tfcmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// logBuf collects what a Process logs.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// component needs no provider download: terraform_data is built in.
const component = `
variable "name" { type = string }
variable "secret" {
  type      = string
  sensitive = true
  default   = "s3cr3t-value"
}
resource "terraform_data" "x" { input = var.name }
output "name" { value = terraform_data.x.output }
output "secret" {
  value     = var.secret
  sensitive = true
}
`

func newProcess(t *testing.T) (*Process, *logBuf) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(component), 0o644))
	cli := filepath.Join(t.TempDir(), "cli.tfrc")
	require.NoError(t, os.WriteFile(cli, nil, 0o644))
	log := &logBuf{}
	p := &Process{Path: testenv.Terraform(t), Dir: dir, Env: testenv.TerraformEnv(cli), Grace: 10 * time.Second,
		OutDir: filepath.Join(dir, ".terraform", OutputDir),
		Stream: func() (io.Writer, func()) { return log, func() {} },
		Note:   func(msg string) { _, _ = log.Write([]byte(msg + "\n")) }}
	return p, log
}

// TestProcessRunsTheCommands runs real terraform through the commands of
// this package: init's text is logged, apply's machine-readable UI gives
// outputs, the change summary and ChangeStarted, plan's exit code 2 is a
// success, output -json is captured and never logged, a failure is an
// *Error with its fields, and nothing is left in OutDir.
func TestProcessRunsTheCommands(t *testing.T) {
	t.Parallel()
	p, log := newProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var pids []int
	p.Started = func(pid int, output string) {
		pids = append(pids, pid)
		require.Equal(t, filepath.Join(p.Dir, ".terraform", OutputDir), filepath.Dir(output))
	}

	_, err := p.Run(ctx, Init(InitOptions{}))
	require.NoError(t, err)
	require.Contains(t, log.String(), "has been successfully initialized")

	change := Change{LockTimeout: "0s", Vars: Vars{Values: map[string]string{"name": "a"}}}
	r, err := p.Run(ctx, Plan(PlanOptions{Change: change}))
	require.NoError(t, err)
	require.Equal(t, 2, r.ExitCode, "changes: -detailed-exitcode 2 is a success")
	require.Equal(t, &ChangeSummary{Add: 1, Operation: "plan"}, r.Changes)
	require.False(t, r.ChangeStarted, "a plan changes nothing")

	r, err = p.Run(ctx, Apply(ApplyOptions{Change: change}))
	require.NoError(t, err)
	require.True(t, r.ChangeStarted)
	require.Equal(t, 1, r.Changes.Add)
	require.JSONEq(t, `"a"`, string(r.Outputs["name"].Value))
	require.True(t, r.Outputs["secret"].Sensitive)
	require.Contains(t, log.String(), "Apply complete!")

	r, err = p.Run(ctx, OutputJSON())
	require.NoError(t, err)
	outs, err := ParseOutputs(r.Stdout)
	require.NoError(t, err)
	require.JSONEq(t, `"s3cr3t-value"`, string(outs["secret"].Value), "output -json gives sensitive values")
	require.NotContains(t, log.String(), "s3cr3t-value", "captured stdout is never logged")

	r, err = p.Run(ctx, Plan(PlanOptions{Change: change}))
	require.NoError(t, err)
	require.Equal(t, 0, r.ExitCode, "no changes")

	// A failure: the fields, the arguments kept but out of the message.
	bad := Change{LockTimeout: "0s", Vars: Vars{Values: map[string]string{"name": "a", "nosuch": "hunter2"}}}
	_, err = p.Run(ctx, Plan(PlanOptions{Change: bad}))
	var te *Error
	require.ErrorAs(t, err, &te)
	require.Equal(t, "plan", te.Command)
	require.Equal(t, 1, te.ExitCode)
	require.Nil(t, te.Err, "terraform exited by itself")
	require.Contains(t, te.Stderr, "nosuch", "the diagnostic is in the error")
	require.Contains(t, te.Args, "nosuch=hunter2")
	require.NotContains(t, err.Error(), "hunter2")
	require.False(t, te.MayHaveChanged())

	// A context that ended: nothing runs, errors.Is sees the cause.
	done, stop := context.WithCancel(ctx)
	stop()
	_, err = p.Run(done, Validate(ValidateOptions{}))
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, errors.As(err, &te) && te.Command == "validate")

	require.Len(t, pids, 6)
	require.False(t, p.Killed())
	ents, err := os.ReadDir(p.OutDir)
	require.NoError(t, err)
	require.Empty(t, ents, "each process's stdout and stderr files are removed")
}

// TestParse reads the documents terraform prints, as it prints them.
func TestParse(t *testing.T) {
	outs, err := ParseOutputs([]byte(`{"a":{"sensitive":false,"type":"string","value":"x"},"b":{"sensitive":true,"type":["list","number"],"value":[1]}}`))
	require.NoError(t, err)
	require.Equal(t, map[string]Output{
		"a": {Type: []byte(`"string"`), Value: []byte(`"x"`)},
		"b": {Sensitive: true, Type: []byte(`["list","number"]`), Value: []byte(`[1]`)},
	}, outs)
	outs, err = ParseOutputs([]byte(`{}`))
	require.NoError(t, err)
	require.NotNil(t, outs)
	_, err = ParseOutputs([]byte(`not json`))
	require.ErrorContains(t, err, "read outputs")

	doc, err := ParsePlan([]byte(`{"resource_changes":[
	  {"address":"a.x","change":{"actions":["create"],"importing":null}},
	  {"address":"a.y","change":{"actions":["no-op"],"importing":{"id":"i-1"}}}],
	  "output_changes":{"o":{"change":{"actions":["update"]}}}}`))
	require.NoError(t, err)
	require.Len(t, doc.ResourceChanges, 2)
	require.False(t, doc.ResourceChanges[0].Imported(), "importing null is no import")
	require.True(t, doc.ResourceChanges[1].Imported())
	require.Equal(t, []string{"update"}, doc.OutputChanges["o"].Change.Actions)
	_, err = ParsePlan([]byte(`[`))
	require.ErrorContains(t, err, "read plan JSON")
}

// TestUIReader: messages' text to the log, diagnostics held and rendered
// as terraform renders them, outputs and the summary kept, a line that
// is not a message logged as is.
func TestUIReader(t *testing.T) {
	ui := strings.Join([]string{
		`{"@message":"Terraform 1.11.4","type":"version"}`,
		`not json`,
		`{"@message":"x: Creating...","type":"apply_start"}`,
		`{"@message":"Warning: w","type":"diagnostic","diagnostic":{"severity":"warning","summary":"w","detail":"d","address":"a.x"}}`,
		`{"@message":"Error: boom","type":"diagnostic","diagnostic":{"severity":"error","summary":"boom"}}`,
		`{"@message":"Apply complete!","type":"change_summary","changes":{"add":1,"change":2,"import":3,"remove":4,"operation":"apply"}}`,
		`{"@message":"Outputs: 2","type":"outputs","outputs":{"o":{"sensitive":false,"type":"string","value":"v"},"bad":{"sensitive":"no"}}}`,
	}, "\n") + "\n"
	var log, held bytes.Buffer
	res := &Result{}
	(&uiReader{log: &log, held: &held, res: res}).read(strings.NewReader(ui))
	require.Equal(t, "Terraform 1.11.4\nnot json\nx: Creating...\nApply complete!\nOutputs: 2\n", log.String())
	require.Equal(t, "Warning: w\n  with a.x\n\nd\n\nError: boom\n\n", held.String())
	require.Equal(t, &ChangeSummary{Add: 1, Change: 2, Import: 3, Remove: 4, Operation: "apply"}, res.Changes)
	require.True(t, res.ChangeStarted)
	require.Equal(t, map[string]Output{"o": {Type: []byte(`"string"`), Value: []byte(`"v"`)}}, res.Outputs, "an unreadable output is left out, the others kept")
}
