package engine_test

import (
	"fmt"

	"github.com/tfisolate/tfisolate/internal/engine"
)

func ExampleParseKind() {
	k, err := engine.ParseKind("OpenTofu")
	if err != nil {
		panic(err)
	}
	fmt.Println(k, k.Product(), k.Executable() != "")
	_, err = engine.ParseKind("terragrunt")
	fmt.Println(err)
	// Output:
	// tofu OpenTofu true
	// engine "terragrunt": unknown engine kind (want "terraform" or "tofu")
}
