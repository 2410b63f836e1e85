package tfcmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// ChangeSummary is terraform's change_summary message.
type ChangeSummary struct {
	Add       int    `json:"add"`
	Change    int    `json:"change"`
	Import    int    `json:"import"`
	Remove    int    `json:"remove"`
	Operation string `json:"operation"`
}

// uiReader reads terraform's machine-readable UI (one JSON message per
// line): the text of each message goes to the log, error and warning
// diagnostics are rendered like terraform's own output and held, outputs
// and the change summary are kept.
type uiReader struct {
	log  io.Writer
	held io.Writer
	res  *Result
}

type uiMessage struct {
	Message    string                     `json:"@message"`
	Type       string                     `json:"type"`
	Diagnostic *uiDiagnostic              `json:"diagnostic"`
	Outputs    map[string]json.RawMessage `json:"outputs"`
	Changes    *ChangeSummary             `json:"changes"`
}

type uiDiagnostic struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail"`
	Address  string `json:"address"`
}

func (u *uiReader) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var m uiMessage
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &m) != nil {
			_, _ = u.log.Write(append(append([]byte(nil), line...), '\n'))
			continue
		}
		switch m.Type {
		case "diagnostic":
			if d := m.Diagnostic; d != nil {
				sev := "Warning"
				if d.Severity == "error" {
					sev = "Error"
				}
				fmt.Fprintf(u.held, "%s: %s\n", sev, d.Summary)
				if d.Address != "" {
					fmt.Fprintf(u.held, "  with %s\n", d.Address)
				}
				if d.Detail != "" {
					fmt.Fprintf(u.held, "\n%s\n", d.Detail)
				}
				_, _ = io.WriteString(u.held, "\n")
				continue
			}
		case "outputs":
			outs := map[string]Output{}
			for name, raw := range m.Outputs {
				var o Output
				if json.Unmarshal(raw, &o) == nil {
					outs[name] = o
				}
			}
			u.res.Outputs = outs
		case "change_summary":
			u.res.Changes = m.Changes
		case "apply_start", "apply_progress", "apply_complete", "apply_errored",
			"provision_start", "provision_progress", "provision_complete", "provision_errored":
			u.res.ChangeStarted = true
		}
		if m.Message != "" {
			_, _ = u.log.Write([]byte(m.Message + "\n"))
		}
	}
	// A scanner error (a line over 64 MiB) leaves the rest unread; drain
	// it so terraform never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, r)
}
