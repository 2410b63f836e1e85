package testprovider_test

import (
	"fmt"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

func ExampleZipName() {
	fmt.Println(testprovider.ZipName("1.1.0", "linux_amd64"))
	// Output: terraform-provider-tfitest_1.1.0_linux_amd64.zip
}

func ExampleCLIConfigFilesystemMirror() {
	fmt.Print(string(testprovider.CLIConfigFilesystemMirror("/tmp/mirror")))
	// Output:
	// provider_installation {
	//   filesystem_mirror {
	//     path    = "/tmp/mirror"
	//     include = ["registry.tfisolate.test/*/*"]
	//   }
	//   direct {
	//     exclude = ["registry.tfisolate.test/*/*"]
	//   }
	// }
}
