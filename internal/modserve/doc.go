// Package modserve serves a machine's module store to a fleet, so a
// fleet downloads each registry module version from upstream once, as
// pluginc's MirrorHandler does for providers. One machine (or a small
// service) runs Handler over a modstore.Store (runner.ModuleServer);
// every other machine's terraform or tofu reaches it through the module
// registry protocol, and its git through git's insteadOf
// (runner.WithModuleServer writes both for each unit's get).
//
//	// the server
//	s, _ := modstore.Open(dir)
//	h, _ := modserve.Handler(s, modserve.WithToken(tok))
//	srv := &http.Server{Addr: ":8443", Handler: h}
//	srv.ListenAndServeTLS(certFile, keyFile)
//
//	// every machine: a CLI config host block per registry host, and
//	// TF_TOKEN_<registry host>=tok
//	host "registry.example.test" {
//	  services = { "modules.v1" = "https://mods.internal:8443/modules.v1/registry.example.test/" }
//	}
//	// and for git::https sources, git's environment:
//	c, _ := modserve.NewClient("https://mods.internal:8443/")
//	env := c.GitConfig([]string{"git.example.test"}, tok, 0)
//
// What a server serves is a module package by its key: a registry
// module's source address (HOST/NAMESPACE/NAME/SYSTEM) and exact version
// (Module), or a git repository over https (git.go: served over git's
// dumb HTTP protocol from a clone made once, reached through git's
// insteadOf, GitConfig). Version lists are the upstream's, asked on each
// request; a repository's refs are its clone's, cloned again after
// WithGitRefresh.
//
// Guarantees:
//
//   - Once per fleet. A package the server's store lacks is fetched from
//     its own registry (service discovery, download answer, the tar.gz
//     or zip archive it points at), a repository cloned (git clone
//     --mirror), under the store's per-key flock, so concurrent
//     requests, in the server's process and in any other sharing its
//     store dir, cause one upstream download; the fill goes on when the
//     asking client goes away, within WithFillTimeout. Of many listings
//     of a stale repository's refs at once, one clones again.
//   - Verified bytes only. An upstream archive is unpacked into the
//     store refusing a path or link leaving the tree, a device or more
//     than WithMaxSize. The server sends the stored tree packed
//     deterministically (the same bytes every time), each file checked
//     against the entry's manifest as it is read (a file changed since
//     fails the request before anything is sent); the download answer
//     gives terraform the archive's SHA-256 as go-getter's checksum
//     parameter, so terraform checks the archive before unpacking it. A
//     git repository's files are each checked against the manifest as
//     they are sent.
//   - A server that is down is said so, by the runner: a get through it
//     that fails runs again from the modules' own sources, and the
//     fallback is named in Report.Warnings, a Warn record, an event and
//     the unit's log (runner.ModuleFallback).
//   - Same trust as the provider mirror: https only (TLS is the host's);
//     with WithToken every request needs "Authorization: Bearer TOKEN"
//     (compared in constant time), except a tree location a download
//     answer gave, which carries an HMAC of its module made with the
//     token (terraform sends no credentials to an archive location); a
//     server URL with credentials or a query is refused (NewClient), so
//     no message carries a secret; upstream URLs are named without their
//     query or credentials. The store follows modstore's ownership rule:
//     nothing another user wrote is believed. WithHosts limits the
//     upstream hosts the server fetches from (without it, any https host
//     a client names).
//   - Nothing waits without a bound: every request runs under the
//     caller's context and the package's timeouts (fill, headers, TLS);
//     DefaultClientTimeout bounds a machine's get through the server.
//
// Not yet: a download location that is a git, s3 or gcs source, or names
// a subdirectory, is refused by name (ErrUpstream); http, s3, gcs and
// ssh module sources called directly are not served, and the server
// clones git repositories without credentials.
package modserve
