package runner

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// outputsComponent has outputs of several types, one of them sensitive.
const outputsComponent = `
resource "terraform_data" "x" { input = "x" }
output "s" { value = "hello" }
output "n" { value = 42 }
output "m" { value = tomap({ a = "1", b = "2" }) }
output "id" { value = terraform_data.x.id }
output "secret" {
  value     = "hunter2-top-secret"
  sensitive = true
}
`

// TestOutputs reads outputs into the Result after Apply and with the
// Output command; a sensitive output's value is in the Result (for
// dependents) but never in its JSON form.
func TestOutputs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.component(t, "outputs", outputsComponent)
	u := Unit{Workdir: workdirSpec("plat-ue2-dev", "outputs", src, nil)}
	r := w.runner(t)

	var id string
	for _, cmd := range []Command{Apply, Output} {
		rep, err := r.Run(testCtx(t), cmd, u)
		require.NoError(t, err, "%s", cmd)
		res := rep.Results[0]
		outs := res.Outputs
		require.Len(t, outs, 5, "%s: %v", cmd, outs)
		check := func(name, value, typ string) {
			t.Helper()
			o := outs[name]
			require.JSONEq(t, value, string(o.Value), "%s: value of %s", cmd, name)
			require.JSONEq(t, typ, string(o.Type), "%s: type of %s", cmd, name)
		}
		check("s", `"hello"`, `"string"`)
		check("n", `42`, `"number"`)
		check("m", `{"a":"1","b":"2"}`, `["map","string"]`)
		check("secret", `"hunter2-top-secret"`, `"string"`)
		require.True(t, outs["secret"].Sensitive)
		for _, name := range []string{"s", "n", "m", "id"} {
			require.False(t, outs[name].Sensitive, name)
		}
		if id == "" {
			id = outputString(t, res, "id")
			require.NotEmpty(t, id)
		}
		require.Equal(t, id, outputString(t, res, "id"), "%s: Output must read what Apply made", cmd)

		b, err := json.Marshal(res)
		require.NoError(t, err)
		require.NotContains(t, string(b), "hunter2", "%s: a sensitive value in the JSON form", cmd)
		var raw struct {
			Outputs map[string]map[string]json.RawMessage `json:"outputs"`
		}
		require.NoError(t, json.Unmarshal(b, &raw))
		require.NotContains(t, raw.Outputs["secret"], "value")
		require.JSONEq(t, `true`, string(raw.Outputs["secret"]["sensitive"]))
		require.JSONEq(t, `"hello"`, string(raw.Outputs["s"]["value"]))
		require.JSONEq(t, `42`, string(raw.Outputs["n"]["value"]))
		require.JSONEq(t, `{"a":"1","b":"2"}`, string(raw.Outputs["m"]["value"]))
	}
}
