// Package modstore is a content-addressed store of directory trees (the
// remote module trees `terraform get` fetches) that any number of
// goroutines and processes on one machine can share safely. It knows
// nothing of terraform: a caller names a tree by a key, any string, and
// gives Get a function that writes the tree when the store lacks it.
//
//	s, err := modstore.Open(dir, modstore.WithLogger(log))
//	tree, filled, err := s.Get(ctx, key, func(ctx context.Context, dir string) error {
//		return fetchInto(ctx, dir) // write the tree into dir
//	})
//	// copy what you need out of tree; never write into it
//
// Layout of the store directory DIR (<hash> is the hex SHA-256 of a key):
//
//	DIR/<hash>/tree/                  the tree fill wrote: what Get returns
//	DIR/<hash>/manifest.json          the key and every path's type, mode, size, SHA-256
//	DIR/.modstore/locks/<hash>.lock   one flock per key, never deleted
//	DIR/.modstore/tmp/<hash>.*        fills under way, entries set aside, or leftovers of dead ones
//
// Guarantees:
//
//   - An entry is either absent or complete. fill writes into a fresh temp
//     dir in DIR/.modstore/tmp (the store's own filesystem); the tree is
//     then recorded in a manifest (every directory, regular file and
//     symlink: path, mode, size, SHA-256 of the content, symlink target),
//     made durable (syncfs), and the entry is renamed into place as
//     DIR/<hash> in one step. A process killed at any point, inside fill
//     or after, leaves either no entry or a complete one: a partial tree
//     is never handed out. Its temp dirs are removed by the next Get of
//     the same key, under that key's lock (so never a live process's),
//     and by Open for every key whose lock is free.
//
//   - fill runs at most once at a time per key across every goroutine and
//     process using DIR: Get calls of one Store share one attempt
//     (internal/flight), processes (and Stores) take the key's flock in
//     DIR/.modstore/locks (internal/store, the mechanism pluginc shares),
//     and whoever waited gets the finished entry
//     without filling again. Waiting honours the caller's context: a Get
//     whose ctx ends while another process fills returns ctx's error.
//
//   - A failed fill stores nothing: its error is returned (wrapped in
//     ErrFill, naming the key; shared with the Get calls of the same
//     Store waiting for it), its temp dir is removed, and the next Get
//     fills again. A tree holding anything but directories, regular files
//     and symlinks is refused with ErrBadTree.
//
//   - Every entry is checked against its manifest before it is handed out:
//     cheaply by default (the same paths, types, modes, sizes and symlink
//     targets, and every file's change stamp -- inode, mtime, ctime -- so
//     a rewrite that keeps the size is noticed without reading any file,
//     as far as the filesystem's timestamp granularity allows), or by
//     hashing every file with WithFullCheck, which sees every change. An entry whose stamps moved
//     but whose content still matches (a restore from backup, a touch) is
//     re-verified by hashing under the key's lock and kept. Anything else
//     -- a file removed, added or changed, a manifest missing, unreadable
//     or naming another key -- makes the entry damaged: it is moved out
//     of the way in one rename and refilled under the key's lock, never
//     handed out. A SHA-256 collision of two keys therefore cannot mix
//     their trees. A manifest a newer release wrote (a version above
//     this one's) is refused by name (a *format.NewerError), never
//     refilled over.
//
//   - Replace puts a freshly filled tree in place of a key's entry (an
//     upgrade fetched a newer set), under the same flock and with the
//     same temp dir, manifest and sync as a fill: the old entry is moved
//     aside in one rename and the new one renamed into place, so a
//     process killed at any point leaves the old entry, the new one, or
//     none (the next Get fills afresh), and the old tree is swept under
//     the lock later. A keep function asked under the lock lets a caller
//     replace only an entry older than what it would write, without
//     racing another process doing the same.
//
//   - Copy copies an entry out and checks the copy against the entry's
//     manifest by content: a copy taken while another process replaced
//     the entry (half old, half new) or damaged it never matches, is
//     thrown away and taken again, the last time under the key's lock.
//     What Copy gives is exactly a tree some fill stored for the key.
//
//   - Only what the effective user or root wrote is believed (invariant
//     12, internal/pathtrust, the rule the provider cache follows): Open,
//     and every Get, Replace and Copy, refuse with an *UnsafePathError
//     (ErrUnsafePath) naming the path, its owner and its mode a store
//     dir, a dir above it or a state dir of the store that someone else
//     owns or that its group or others can write to (a dir above the
//     store may be sticky and writable by all, as /tmp is); nothing is
//     created in such a dir. An entry someone else could have written (its
//     dir, manifest, tree or any path in the tree owned by another user
//     or writable by group or others) is treated as damaged: moved aside
//     and refilled into a private entry, never handed out. fill's tree
//     loses the write bits of group and others before it is recorded, so
//     the store never keeps what others could change. The store cannot
//     be shared with a group.
//
// Entries are read-only to callers. The directory Get returns is shared
// by every user of the store: copy what you need out of it (a new inode
// per file, as a plain or reflink copy makes; never a hard link, which
// would let a write to the copy change the entry) and never write, chmod
// or remove anything in it. The check is made when Get returns: a copy
// taken out of Get's directory while someone else damages the entry (or
// while another process replaces it) is not protected by it; Copy's is.
//
// Stats counts fills, hits, waits for another process, repairs of
// damaged entries, replacements and copies taken again. The store logs nothing unless given WithLogger.
package modstore
