package runner

import (
	"bytes"
	"io"
	"sync"
)

// combined is the shared output stream. Whole lines are written under its
// mutex, so lines from different units never interleave.
type combined struct {
	mu sync.Mutex
	w  io.Writer
}

// unitOutput collects one unit's output: every complete line goes to the
// unit's log file as is and to the combined stream prefixed with
// "[unitID] ". Each stream (terraform's stdout, its stderr, the runner's
// own notes) has its own line buffer so a line is never split between
// streams.
type unitOutput struct {
	prefix []byte
	out    *combined // nil: no combined stream

	mu  sync.Mutex // serializes writes to log
	log io.Writer  // nil: no log file
}

func newUnitOutput(id string, out *combined, log io.Writer) *unitOutput {
	return &unitOutput{prefix: []byte("[" + id + "] "), out: out, log: log}
}

func (u *unitOutput) writeLine(line []byte) {
	u.mu.Lock()
	if u.log != nil {
		_, _ = u.log.Write(line) // a failing log must not fail the run
	}
	u.mu.Unlock()
	if u.out != nil && u.out.w != nil {
		u.out.mu.Lock()
		_, _ = u.out.w.Write(append(append([]byte(nil), u.prefix...), line...))
		u.out.mu.Unlock()
	}
}

// stream returns a writer for one source of output. Call its flush when
// the source is done, to emit a last line without a newline.
func (u *unitOutput) stream() *lineWriter { return &lineWriter{dst: u} }

// notef writes a line of the runner's own into the unit's output.
func (u *unitOutput) note(s string) { u.writeLine([]byte("tfisolate: " + s + "\n")) }

// lineWriter buffers partial lines and passes on complete ones.
type lineWriter struct {
	dst *unitOutput
	mu  sync.Mutex
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.dst.writeLine(l.buf[:i+1])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) == 0 {
		l.buf = nil // let a large burst's backing array go
	}
	return len(p), nil
}

func (l *lineWriter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.dst.writeLine(append(l.buf, '\n'))
		l.buf = nil
	}
}
