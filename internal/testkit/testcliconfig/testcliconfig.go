// Package testcliconfig holds the CLI config files that the tests of
// cliconfig and pluginc both read: one saying everything Terraform's CLI
// config can say, in its two syntaxes, and helpers to write and compare
// them. Tests only.
package testcliconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"github.com/tfisolate/tfisolate/cliconfig"
)

// PublicHost is the default registry host, never spelled out.
var PublicHost = tfaddr.DefaultProviderRegistryHost.String()

// WriteFile writes src to a file named name in a temp dir and returns
// its path.
func WriteFile(t testing.TB, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	return p
}

// EveryBlockHCL and EveryBlockJSON say the same thing in Terraform's two
// CLI config syntaxes: every block kind, and settings pluginc does not
// model.
var EveryBlockHCL = `# a user's ~/.terraformrc
disable_checkpoint = true
disable_checkpoint_signature = true
plugin_cache_dir = "/home/u/.terraform.d/plugin-cache"

credentials "tfe.example.com" {
  token = "tok-1"
}
credentials "registry.corp.example:8443" {
  token = "tok-2"
}
credentials_helper "vault" {
  args = ["--mount", "tf"]
}
host "tfe.example.com" {
  services = {
    "providers.v1" = "https://tfe.example.com/api/providers/"
    "login.v1" = {
      client = "terraform-cli"
      ports  = [10000, 10010]
    }
  }
}

provider_installation {
  dev_overrides {
    "corp.example/acme/dev" = "/home/u/src/dev"
  }
  network_mirror {
    url     = "https://mirror.corp.example/providers/"
    include = ["` + PublicHost + `/hashicorp/*", "corp.example/*/*"]
  }
  filesystem_mirror {
    path    = "/opt/providers"
    exclude = ["hashicorp/null"]
  }
  direct {
    exclude = ["*/*/*"]
  }
}

providers {
  legacy = "/opt/legacy-provider"
}
plugin_cache_may_break_dependency_lock_file = true
`

var EveryBlockJSON = `{
  "disable_checkpoint": true,
  "disable_checkpoint_signature": true,
  "plugin_cache_dir": "/home/u/.terraform.d/plugin-cache",
  "credentials": {
    "tfe.example.com": {"token": "tok-1"},
    "registry.corp.example:8443": {"token": "tok-2"}
  },
  "credentials_helper": {"vault": {"args": ["--mount", "tf"]}},
  "host": {
    "tfe.example.com": {
      "services": {
        "providers.v1": "https://tfe.example.com/api/providers/",
        "login.v1": {"client": "terraform-cli", "ports": [10000, 10010]}
      }
    }
  },
  "provider_installation": [{
    "dev_overrides": [{"corp.example/acme/dev": "/home/u/src/dev"}],
    "network_mirror": [{
      "url": "https://mirror.corp.example/providers/",
      "include": ["` + PublicHost + `/hashicorp/*", "corp.example/*/*"]
    }],
    "filesystem_mirror": [{"path": "/opt/providers", "exclude": ["hashicorp/null"]}],
    "direct": [{"exclude": ["*/*/*"]}]
  }],
  "providers": [{"legacy": "/opt/legacy-provider"}],
  "plugin_cache_may_break_dependency_lock_file": true
}
`

// Comparable strips what differs between two reads of the same settings
// (the path, the lines).
func Comparable(f *cliconfig.File) *cliconfig.File {
	c := *f
	c.Path = ""
	if f.ProviderInstallation != nil {
		pi := *f.ProviderInstallation
		pi.Path, pi.Line = "", 0
		pi.Methods = nil
		for _, m := range f.ProviderInstallation.Methods {
			m.Path, m.Line = "", 0
			pi.Methods = append(pi.Methods, m)
		}
		c.ProviderInstallation = &pi
	}
	return &c
}
