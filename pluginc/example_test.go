package pluginc_test

import (
	"archive/zip"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tfisolate/tfisolate/cliconfig"
	"github.com/tfisolate/tfisolate/pluginc"
)

func ExampleParseProvider() {
	p, err := pluginc.ParseProvider("Example.Test/Acme/Demo")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p)
	_, err = pluginc.ParseProvider("a/b/c/d")
	fmt.Println(err != nil)
	// Output:
	// example.test/acme/demo
	// true
}

// A namespace with an underscore is Terraform 1.16's: its grammar takes
// it, OpenTofu's and older Terraform's refuse it, and no grammar takes a
// leading or trailing underscore.
func ExampleGrammar_Parse() {
	for _, g := range []pluginc.Grammar{pluginc.DashNamespaces, pluginc.UnderscoreNamespaces} {
		for _, addr := range []string{"registry.example.test/my_org/demo", "registry.example.test/_org/demo"} {
			if _, err := g.Parse(addr); err != nil {
				fmt.Printf("%s: %s refused\n", g, addr)
				continue
			}
			fmt.Printf("%s: %s accepted\n", g, addr)
		}
	}
	// Output:
	// dash namespaces: registry.example.test/my_org/demo refused
	// dash namespaces: registry.example.test/_org/demo refused
	// underscore namespaces: registry.example.test/my_org/demo accepted
	// underscore namespaces: registry.example.test/_org/demo refused
}

func ExampleNormalizeConstraints() {
	s, err := pluginc.NormalizeConstraints("< 2.0, >= 1.2")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s)
	// Output: >= 1.2.0, < 2.0.0
}

// writeMirror lays out a packed filesystem mirror with one tiny package.
func writeMirror(dir string) error {
	pkgDir := filepath.Join(dir, "example.test", "acme", "demo")
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(pkgDir, "terraform-provider-demo_1.2.0_linux_amd64.zip"))
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	w, err := zw.Create("terraform-provider-demo_v1.2.0")
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte("not really a provider\n")); err != nil {
		return err
	}
	return zw.Close()
}

func ExampleCache_Ensure() {
	root, err := os.MkdirTemp("", "pluginc-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	mirror := filepath.Join(root, "mirror")
	if err := writeMirror(mirror); err != nil {
		log.Fatal(err)
	}

	cache, err := pluginc.Open(filepath.Join(root, "cache"),
		pluginc.WithSource(pluginc.FilesystemMirror(mirror)),
		pluginc.WithPlatforms("linux_amd64"))
	if err != nil {
		log.Fatal(err)
	}
	p, err := pluginc.ParseProvider("example.test/acme/demo")
	if err != nil {
		log.Fatal(err)
	}
	pkgs, err := cache.Ensure(context.Background(), pluginc.Requirement{Provider: p, Constraints: "~> 1.0"})
	if err != nil {
		log.Fatal(err)
	}
	rel, _ := filepath.Rel(cache.PackagesDir(), pkgs[0].Dir)
	fmt.Println(filepath.ToSlash(rel))
	fmt.Printf("%+v\n", cache.Stats().Downloads)
	fmt.Print(string(pluginc.LockFile(pkgs)))
	// Output:
	// example.test/acme/demo/1.2.0/linux_amd64
	// 1
	// # This file is maintained automatically by "terraform init".
	// # Manual edits may be lost in future updates.
	//
	// provider "example.test/acme/demo" {
	//   version     = "1.2.0"
	//   constraints = "~> 1.0"
	//   hashes = [
	//     "h1:3po1XJ7PA3mR4TC3qr8cHGq/NIojLza9MZhY35QjIEI=",
	//   ]
	// }
}

// The user's own CLI config survives TF_CLI_CONFIG_FILE: its credentials
// pass through, its plugin_cache_dir does not, and the cache decides how
// providers are installed.
func ExampleCache_CLIConfigFor() {
	tmp, err := os.MkdirTemp("", "pluginc-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	rc := filepath.Join(tmp, ".terraformrc")
	err = os.WriteFile(rc, []byte(`credentials "registry.corp.example" {
  token = "s3cret"
}
plugin_cache_dir = "/home/me/.terraform.d/plugin-cache"
`), 0o644)
	if err != nil {
		log.Fatal(err)
	}
	user, err := cliconfig.Read(rc)
	if err != nil {
		log.Fatal(err)
	}
	c, err := pluginc.Open(filepath.Join(tmp, "cache"), pluginc.WithCLIConfig(user))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(c.CLIConfigFor(user)))
	// Output:
	// {
	//   "credentials": {
	//     "registry.corp.example": {
	//       "token": "s3cret"
	//     }
	//   },
	//   "provider_installation": [
	//     {
	//       "direct": [
	//         {}
	//       ]
	//     }
	//   ]
	// }
}
