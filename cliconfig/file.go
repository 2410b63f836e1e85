package cliconfig

import (
	"errors"
	"fmt"
)

// File is a user's Terraform (or OpenTofu) CLI configuration file
// as the engine reads it: HCL 1 native syntax or JSON, decoded with the
// same library and the same rules. Read, Parse and Find fill it;
// pluginc's Cache.CLIConfigFor merges it with the cache's provider
// installation, pluginc.WithCLIConfig gives its credentials to the
// cache's own requests, and pluginc.SourcesFrom turns its
// provider_installation into the cache's sources.
type File struct {
	// Path is the file it was read from (after Merge, both files, joined
	// by ", "). It names the file in errors.
	Path string

	// Credentials holds the credentials "HOST" { token = "..." } blocks:
	// each block's arguments by host name as written. Terraform reads the
	// token argument (a string) and nothing else.
	Credentials map[string]map[string]any

	// CredentialsHelpers holds the credentials_helper "NAME" { args = [...] }
	// block: its args by name. Terraform allows at most one.
	CredentialsHelpers map[string][]string

	// Hosts holds the host "NAME" { services = {...} } blocks: each
	// block's services map by host name, as HCL 1 decodes it. Terraform
	// uses it instead of service discovery for that host; so does the
	// cache under WithCLIConfig (for "providers.v1").
	Hosts map[string]map[string]any

	// DisableCheckpoint and DisableCheckpointSignature are Terraform's
	// disable_checkpoint and disable_checkpoint_signature settings.
	DisableCheckpoint          bool
	DisableCheckpointSignature bool

	// PluginCacheDir is the plugin_cache_dir setting, kept so a caller can
	// see it was set. It is never used: CLIConfigFor leaves it out, since
	// Terraform's writes into a plugin cache are not safe under
	// concurrency; the shared cache takes its place.
	PluginCacheDir string

	// ProviderInstallation is the provider_installation block, or nil when
	// the file has none (Terraform then installs directly from each
	// provider's registry, after its implied local plugin directories).
	ProviderInstallation *ProviderInstallation

	// Other holds every other top-level setting as HCL 1 decodes it (the
	// legacy providers and provisioners maps,
	// plugin_cache_may_break_dependency_lock_file, OpenTofu's
	// oci_credentials blocks, ...), by name. CLIConfigFor passes them
	// through unchanged.
	Other map[string]any

	// DefaultRegistryHost is the host that two-part include and exclude
	// patterns ("NAMESPACE/TYPE") name, as for the engine that reads the
	// file. Empty means Terraform's default registry host
	// (tfaddr.DefaultProviderRegistryHost); set OpenTofu's for a file
	// OpenTofu reads.
	DefaultRegistryHost string
}

// ProviderInstallation is a provider_installation block.
type ProviderInstallation struct {
	// Methods are the installation methods in the order written.
	Methods []InstallMethod
	// DevOverrides is the dev_overrides block: a local directory by
	// provider source address as written. It passes through CLIConfigFor
	// to Terraform; Sources ignores it (an overridden provider is never
	// installed).
	DevOverrides map[string]string

	// Path and Line say where the block was written, for errors about
	// it; empty for a block built in code.
	Path string
	Line int
}

// InstallMethod is one installation method of a provider_installation block.
type InstallMethod struct {
	// Kind is the block type: "direct", "filesystem_mirror",
	// "network_mirror", or OpenTofu's "oci_mirror".
	Kind string
	// Location is a filesystem_mirror's path or a network_mirror's url;
	// empty for other kinds.
	Location string
	// Include and Exclude are the provider patterns as written
	// ("HOST/NAMESPACE/TYPE" or "NAMESPACE/TYPE", each part may be "*").
	Include, Exclude []string
	// Other holds the block's other arguments as HCL 1 decodes them (an
	// oci_mirror's repository_template), passed through by CLIConfigFor.
	Other map[string]any

	// Path and Line say where the block was written, for errors about
	// it; empty for a block built in code.
	Path string
	Line int
}

// Merge returns the settings of f and then later, merged the way
// Terraform merges its CLI config files (~/.terraformrc first, then every
// *.tfrc and *.tfrc.json file in its config directory in name order, such
// as the credentials.tfrc.json that terraform login writes):
// credentials, credentials helpers, hosts and other settings from later
// replace those of the same name, disable_checkpoint* are set if either
// sets them, the first plugin_cache_dir set stays. Two files with a
// provider_installation block, or with two different credentials helpers
// between them, are an error naming both files, as Terraform refuses
// them. Neither input is changed.
func (f *File) Merge(later *File) (*File, error) {
	if f == nil || later == nil {
		return nil, errors.New("merge CLI configs: nil file")
	}
	out := &File{
		Path:                       f.Path + ", " + later.Path,
		DisableCheckpoint:          f.DisableCheckpoint || later.DisableCheckpoint,
		DisableCheckpointSignature: f.DisableCheckpointSignature || later.DisableCheckpointSignature,
		PluginCacheDir:             cmpOr(f.PluginCacheDir, later.PluginCacheDir),
		DefaultRegistryHost:        cmpOr(f.DefaultRegistryHost, later.DefaultRegistryHost),
		Credentials:                mergeMaps(f.Credentials, later.Credentials),
		CredentialsHelpers:         mergeMaps(f.CredentialsHelpers, later.CredentialsHelpers),
		Hosts:                      mergeMaps(f.Hosts, later.Hosts),
		Other:                      mergeMaps(f.Other, later.Other),
		ProviderInstallation:       f.ProviderInstallation,
	}
	if later.ProviderInstallation != nil {
		if f.ProviderInstallation != nil {
			return nil, fmt.Errorf("%w: %s and %s both have a provider_installation block; Terraform allows only one", ErrInvalid, f.Path, later.Path)
		}
		out.ProviderInstallation = later.ProviderInstallation
	}
	if len(out.CredentialsHelpers) > 1 {
		return nil, fmt.Errorf("%w: %s and %s name %d credentials helpers between them; Terraform allows only one", ErrInvalid, f.Path, later.Path, len(out.CredentialsHelpers))
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func mergeMaps[V any](a, b map[string]V) map[string]V {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := make(map[string]V, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
