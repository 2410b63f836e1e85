package tfcmd

import (
	"encoding/json"
	"fmt"
)

// Output is one root module output as terraform gives it (output -json,
// or the machine-readable UI's outputs message): the value and its type
// as JSON.
type Output struct {
	Sensitive bool            `json:"sensitive"`
	Type      json.RawMessage `json:"type"`
	Value     json.RawMessage `json:"value"`
}

// OutputJSON builds terraform output -json; its stdout is captured
// (sensitive values are in it in clear): read it with ParseOutputs.
func OutputJSON() Cmd { return Cmd{Args: []string{"output", "-json"}, Capture: true} }

// ParseOutputs reads terraform output -json.
func ParseOutputs(b []byte) (map[string]Output, error) {
	var outs map[string]Output
	if err := json.Unmarshal(b, &outs); err != nil {
		return nil, fmt.Errorf("read outputs: %w", err)
	}
	if outs == nil {
		outs = map[string]Output{}
	}
	return outs, nil
}
