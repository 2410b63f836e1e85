// Package providerreqs finds the provider requirements of a unit's
// module tree: which providers its modules require, under which version
// constraints, and which versions and hashes its dependency lock file
// already pins. The runner gives them to the provider cache (one leader
// per requirement set, see Key) and writes the lock file the cache
// returns into the unit's workdir.
//
// Guarantees:
//
//   - Discover reads the root module and every local module it reaches,
//     and, when the unit has installed remote modules, every module its
//     modules.json records: a provider that only a remote module requires
//     is found too. Every directory is read by the engine's rule for
//     configuration files (modtree.Files), the rule the tree was walked by.
//   - Requirements are merged per provider: one Requirement each, sorted
//     by address, its constraints joined with ", " in the order found,
//     each once, blank ones left out.
//   - A short address takes the engine's registry host, as the engine
//     resolves it: "TYPE" is HOST/hashicorp/TYPE, "NAMESPACE/TYPE" is
//     HOST/NAMESPACE/TYPE. Terraform's built-in provider (terraform_data's)
//     is never a requirement: it is never installed.
//   - A source address is parsed by the engine's grammar
//     (Unit.Grammar), which GrammarOf decides from the engine's kind and
//     version, in this one place: Terraform 1.16 and later accept an
//     underscore in a namespace ("my_org"), OpenTofu and older Terraform
//     refuse it, as their own address libraries do. An address the
//     engine refuses is an error naming the module, the provider and
//     the address, before anything is installed.
//   - Versions and hashes pinned in the root's .terraform.lock.hcl are kept
//     (Requirement.Locked, LockedHashes), as terraform init keeps them;
//     with Unit.Upgrade they are ignored, as init -upgrade ignores them,
//     and a lock file that does not parse does not stop the upgrade.
//   - Nothing is guessed: a module that does not parse, a malformed
//     provider address, a modules.json or lock file that cannot be read
//     or parsed is an error naming it, never a shorter list (a partly
//     read module's requirements cannot be trusted to be complete).
//   - Key is made of every field of every Requirement, in order, and of
//     nothing else: units with equal requirements (every instance of a
//     component) get equal keys, so they share one leader and one lock
//     file, computed once; a set that differs in a constraint, a locked
//     version or a locked hash gets a key of its own. Its bytes are
//     pinned by a test.
//
// It reads files and writes none; it never runs an engine and never
// touches the network.
package providerreqs
