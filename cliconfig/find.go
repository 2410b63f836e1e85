package cliconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Find reads the CLI configuration that terraform (engine
// "terraform") or OpenTofu ("tofu") would read in the environment lookup
// describes (nil: os.LookupEnv), merged the way that engine merges it; nil
// when there is none. The rules, per engine:
//
//   - TF_CLI_CONFIG_FILE, else TERRAFORM_CONFIG, names the one file read
//     (a missing file is no config, as terraform ignores it);
//   - otherwise terraform reads ~/.terraformrc, and OpenTofu ~/.tofurc, or
//     ~/.terraformrc when only that exists, or $XDG_CONFIG_HOME/opentofu/tofurc
//     when neither does; then every *.tfrc and *.tfrc.json file of the
//     config dir (~/.terraform.d, or for OpenTofu $XDG_CONFIG_HOME/opentofu
//     when that dir does not exist), in name order, each over the last (the
//     credentials.tfrc.json that `terraform login` writes is one).
//
// For OpenTofu, two-part include and exclude patterns resolve on its own
// registry host, registryHost. Windows paths (%APPDATA%) are not looked
// for.
//
// Like terraform, which warns about a CLI config it cannot use and runs
// on, a file that cannot be read or parsed (a syntax error, an unknown
// provider_installation method, a directory named as the file), or that
// conflicts with the files before it, is left out: the config is merged
// from the others, and the error, when not nil, names every file left
// out and why (it wraps ErrInvalid where a file was invalid).
// Callers warn with it and go on with the config returned.
func Find(engine, registryHost string, lookup func(string) (string, bool)) (*File, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	get := func(k string) string { v, _ := lookup(k); return v }
	var files []string
	switch {
	case get("TF_CLI_CONFIG_FILE") != "":
		files = []string{get("TF_CLI_CONFIG_FILE")}
	case get("TERRAFORM_CONFIG") != "":
		files = []string{get("TERRAFORM_CONFIG")}
	default:
		home := get("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		if home == "" || runtime.GOOS == "windows" {
			return nil, nil
		}
		xdg := get("XDG_CONFIG_HOME")
		configDir := filepath.Join(home, ".terraform.d")
		main := filepath.Join(home, ".terraformrc")
		if engine == "tofu" {
			switch {
			case exists(filepath.Join(home, ".tofurc")):
				main = filepath.Join(home, ".tofurc")
			case exists(main):
			case xdg != "":
				main = filepath.Join(xdg, "opentofu", "tofurc")
			}
			if !exists(configDir) && xdg != "" {
				configDir = filepath.Join(xdg, "opentofu")
			}
		}
		files = append(files, main)
		ents, _ := os.ReadDir(configDir)
		var extra []string
		for _, e := range ents {
			n := e.Name()
			if !e.IsDir() && (strings.HasSuffix(n, ".tfrc") || strings.HasSuffix(n, ".tfrc.json")) {
				extra = append(extra, filepath.Join(configDir, n))
			}
		}
		slices.Sort(extra)
		files = append(files, extra...)
	}
	var merged *File
	var left []error
	for _, p := range files {
		f, err := Read(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			left = append(left, fmt.Errorf("%s left out: %w", p, err))
			continue
		}
		if engine == "tofu" {
			f.DefaultRegistryHost = registryHost
		}
		if merged == nil {
			merged = f
			continue
		}
		m, err := merged.Merge(f)
		if err != nil {
			left = append(left, fmt.Errorf("%s left out: %w", p, err))
			continue
		}
		merged = m
	}
	return merged, errors.Join(left...)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
