package backendcfg_test

import (
	"fmt"

	"github.com/tfisolate/tfisolate/internal/backendcfg"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// The backend a root module configures, as the refusal of a changed
// backend names it (a setting built from a variable as its expression, a
// credential not at all), and its digest, which a resource added beside
// it does not change.
func ExampleConfigured() {
	backend := modtree.ConfigFile{Name: "backend.tf", Data: []byte(`terraform {
  backend "s3" {
    bucket     = "states"
    key        = "app/${var.env}.tfstate"
    region     = "eu-west-1"
    access_key = "not shown"
  }
}
`)}
	main := modtree.ConfigFile{Name: "main.tf", Data: []byte(`resource "terraform_data" "x" {}`)}
	fmt.Println(backendcfg.Configured([]modtree.ConfigFile{backend, main}))

	before := backendcfg.Digest([]modtree.ConfigFile{backend}, "/components/app", nil, "")
	after := backendcfg.Digest([]modtree.ConfigFile{backend, main}, "/components/app", nil, "")
	fmt.Println(before == after)
	// Output:
	// "s3" (bucket=states, key="app/${var.env}.tfstate", region=eu-west-1)
	// true
}
