package modinstall_test

import (
	"fmt"

	"github.com/tfisolate/tfisolate/internal/modinstall"
	"github.com/tfisolate/tfisolate/internal/modmanifest"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// A unit has greet 1.1.0 installed; a shared set holding 1.0.0 would be
// older for it, as long as its constraint still allows 1.1.0.
func ExampleOlder() {
	const src = "registry.example.test/acme/greet/aws"
	have := []modmanifest.Record{{Key: "greet", Source: src, Version: "1.1.0"}}
	set := []modmanifest.Record{{Key: "greet", Source: src, Version: "1.0.0"}}
	fmt.Println(modinstall.Older(have, set, []modtree.Call{{Key: "greet", Source: src, Version: ">= 1.0"}}))
	fmt.Println(modinstall.Older(have, set, []modtree.Call{{Key: "greet", Source: src, Version: "~> 1.0.0"}}))
	// Output:
	// [module.greet registry.example.test/acme/greet/aws: 1.1.0, the set has 1.0.0]
	// []
}
