// Package pathtrust is the one check of who may have written a path the
// SDK reads records from (invariant 12): the provider cache (pluginc),
// the module store (internal/modstore) and the workdir root and homes
// (workdir) all use it, so a dir is trusted by one rule everywhere.
//
// The rule, as ssh and gpg apply it: a directory the SDK keeps records in
// (a root) and every directory in it must be owned by the effective user
// or root and writable by neither its group nor others; a directory above
// a root may be writable by everyone only when it is sticky, as /tmp is
// (the sticky bit keeps others from renaming or removing what is ours in
// it). A Policy with Shared set also trusts one group: paths of that
// group may be the group's and writable by it (pluginc's WithSharedGroup).
//
// On platforms without Unix owners and modes (Windows) nothing is
// checked: Owner reports no owner and every check passes.
package pathtrust
