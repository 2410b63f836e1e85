package providerreqs_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/internal/modtree"
	"github.com/tfisolate/tfisolate/internal/providerreqs"
)

// The requirements of a root module that calls a local one: merged per
// provider, short addresses on the engine's registry host, the lock
// file's pin kept.
func ExampleDiscover() {
	dir, err := os.MkdirTemp("", "providerreqs")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for name, body := range map[string]string{
		"main.tf": `terraform {
  required_providers {
    random = { source = "example.invalid/acme/random", version = ">= 3.0" }
  }
}
module "net" {
  source = "./net"
}`,
		filepath.Join("net", "main.tf"): `terraform {
  required_providers {
    random = { source = "example.invalid/acme/random", version = "< 4.0" }
    null   = { version = "~> 3.2" }
  }
}`,
		providerreqs.LockFileName: `provider "example.invalid/acme/random" {
  version = "3.6.0"
  hashes  = ["h1:AAAA="]
}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			panic(err)
		}
	}
	reqs, err := providerreqs.Discover(modtree.Walk(dir, modtree.TerraformFiles), providerreqs.Unit{Host: "registry.invalid"})
	if err != nil {
		panic(err)
	}
	fmt.Print(providerreqs.Key(reqs))
	// Output:
	// example.invalid/acme/random|>= 3.0, < 4.0|3.6.0|h1:AAAA=
	// registry.invalid/hashicorp/null|~> 3.2||
}
