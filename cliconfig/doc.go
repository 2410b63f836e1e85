// Package cliconfig finds and reads a user's Terraform (or OpenTofu) CLI
// configuration as the engine itself does, so that a tool running
// terraform on the user's behalf can pass it through instead of losing
// it to its own TF_CLI_CONFIG_FILE.
//
// Find applies the engine's rules for which files it reads
// (TF_CLI_CONFIG_FILE, ~/.terraformrc or ~/.tofurc, the *.tfrc files of
// the config dir such as the one `terraform login` writes) and merges
// them as the engine merges them; Read and Parse read one file; File is
// what they give: credentials, credentials helpers, host blocks,
// provider_installation with its methods and patterns, and every other
// setting kept as decoded. Package pluginc uses a File for its own
// downloads (pluginc.WithCLIConfig, pluginc.SourcesFrom) and to build
// the config terraform gets (Cache.CLIConfigFor).
//
// Guarantees:
//
//   - Read as the engine reads: HCL 1 native syntax or JSON (when the
//     first non-space character is "{"), decoded with HCL 1's decoder
//     and the same field names; settings the package does not model are
//     kept in File.Other, so nothing the user wrote is lost on the way
//     through. Provider addresses and patterns are read by the widest
//     rule of the engines (a namespace with underscores, as Terraform
//     1.16 allows), never a narrower one; an engine that refuses one
//     says so itself.
//   - A file the engine would refuse (bad syntax, a misshapen block, an
//     invalid host name, two provider_installation blocks, an unknown
//     installation method, a bad include or exclude pattern) is refused
//     with an *Error naming the file and the line, wrapping ErrInvalid;
//     a file that cannot be read is an error wrapping the os error.
//   - Find never fails a caller over a file the engine would only warn
//     about: such a file is left out, the rest is merged, and the error
//     returned beside the File names each file left out and why.
//   - Nothing is written and nothing is run (a credentials_helper is
//     recorded, never executed); Read, Parse and Find hold no state.
package cliconfig
