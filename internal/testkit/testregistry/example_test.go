package testregistry_test

import (
	"fmt"
	"io"
	"log"

	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

func Example() {
	srv, err := testregistry.New(testregistry.WithThrottle(10 << 20))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Add(testregistry.Package{Namespace: "acme", Type: "demo", Version: "1.0.0", Platform: "linux_amd64", Zip: []byte("zip bytes")}); err != nil {
		log.Fatal(err)
	}
	resp, err := srv.HTTPClient().Get(srv.URL() + "/v1/providers/acme/demo/versions")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Print(string(b))
	fmt.Println(srv.Requests())
	// Output:
	// {"versions":[{"version":"1.0.0","protocols":["5.0","6.0"],"platforms":[{"os":"linux","arch":"amd64"}]}]}
	// 1
}
