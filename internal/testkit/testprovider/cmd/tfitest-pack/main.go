// Command tfitest-pack writes a tfitest provider package:
//
//	tfitest-pack OUT.zip BINARY VERSION
//
// It exists so tests built with -race can zip large binaries in a process
// whose compressor is not instrumented; testprovider.Binary.Zip runs it.
package main

import (
	"fmt"
	"os"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: tfitest-pack OUT.zip BINARY VERSION")
		os.Exit(2)
	}
	if err := testprovider.WriteZipFile(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
