package pluginc_test

import (
	"log"
	"net/http"
	"os"
	"time"

	"github.com/tfisolate/tfisolate/pluginc"
)

// The fleet's mirror machine serves its cache over its own TLS; every
// runner then installs with the mirror first and the registry after it,
// its TF_TOKEN_<mirror host> holding the same token.
func ExampleCache_MirrorHandler() {
	c, err := pluginc.Open("/var/cache/provider-mirror", pluginc.WithPlatforms("linux_amd64", "linux_arm64"))
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{
		Addr:              ":8443",
		Handler:           c.MirrorHandler(pluginc.WithMirrorToken(os.Getenv("MIRROR_TOKEN"))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { log.Fatal(srv.ListenAndServeTLS("mirror.crt", "mirror.key")) }()

	// On each runner:
	runnerCache, err := pluginc.Open(os.ExpandEnv("$HOME/.cache/providers"),
		pluginc.WithSource(pluginc.NetworkMirror("https://mirror.internal:8443/"), pluginc.Registry()))
	if err != nil {
		log.Fatal(err)
	}
	_ = runnerCache
}
