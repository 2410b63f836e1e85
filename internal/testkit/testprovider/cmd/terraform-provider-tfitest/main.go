// Command terraform-provider-tfitest serves the tfitest test provider over
// Terraform's plugin protocol 6. Terraform starts it; run by hand it prints
// go-plugin's refusal and exits non-zero.
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testprovider/provider"
)

func main() {
	if err := provider.StartUp(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := tf6server.Serve(testprovider.Source, provider.New); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
