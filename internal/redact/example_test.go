package redact_test

import (
	"fmt"

	"github.com/tfisolate/tfisolate/internal/redact"
)

// A sensitive output and an unmarked copy of it in a resource's values
// are both replaced; the address and the plain value stay.
func ExamplePlanJSON() {
	doc := `{"output_changes":{"pw":{"actions":["create"],"after":"hunter2-long","after_sensitive":true}},` +
		`"planned_values":{"root_module":{"resources":[{"address":"terraform_data.copy","values":{"output":"hunter2-long","id":"x-1"}}]}}}`
	out, err := redact.PlanJSON([]byte(doc), "(sensitive value)")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// {"output_changes":{"pw":{"actions":["create"],"after":"(sensitive value)","after_sensitive":true}},"planned_values":{"root_module":{"resources":[{"address":"terraform_data.copy","values":{"id":"x-1","output":"(sensitive value)"}}]}}}
}
