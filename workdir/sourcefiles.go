package workdir

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
)

// sourceFilesFile, under an instance's metaDir, lists what the last build
// materialized from the source, file by file, so that a record made from
// one build (a saved plan's) can name the files that differ in another.
// It is written by every build before its complete stamp, and read only
// by Workdir.SourceFiles: Prepare never needs it.
const sourceFilesFile = "files.json"

// sourceFilesVersion is the record's format.
const sourceFilesVersion = 1

// sourceFilesRecord is the content of sourceFilesFile.
type sourceFilesRecord struct {
	Version int `json:"version"`
	// Materialized is the stamp's Materialized of the build it
	// describes: a record of another build is not this one's.
	Materialized string `json:"materialized"`
	// Files maps each file's slash path relative to the component
	// ("main.tf", "../modules/net/main.tf") to fileDigest of it.
	Files map[string]string `json:"files"`
}

// fileDigest is what SourceFiles gives for one file: its content's
// SHA-256 and its mode, the two things of a file the workdir's digests
// cover.
func fileDigest(e entry) string {
	return hex.EncodeToString(e.sum[:]) + " " + strconv.FormatUint(uint64(e.perm), 8)
}

// writeSourceFiles records written, the entries a build materialized
// from the source (component is the component's slash path under src/),
// for the build whose Materialized is materialized. It does not sync:
// the build syncs the filesystem once before its complete stamp.
func writeSourceFiles(home, component, materialized string, written []entry) error {
	rec := sourceFilesRecord{Version: sourceFilesVersion, Materialized: materialized, Files: make(map[string]string, len(written))}
	for _, e := range written {
		rel, err := filepath.Rel(filepath.FromSlash(component), filepath.FromSlash(e.rel))
		if err != nil {
			return fmt.Errorf("record the source files: %w", err)
		}
		rec.Files[filepath.ToSlash(rel)] = fileDigest(e)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(home, metaDir, sourceFilesFile), b, atomicfile.Record, atomicfile.NoSync()); err != nil {
		return fmt.Errorf("record the source files: %w", err)
	}
	return nil
}

// backfillSourceFiles writes the record of a home an older release
// built, which has none, on a Prepare that finds it up to date: ents is
// the source set as just hashed, which holds what the build wrote (the
// stamp's files and seeded lock file) when their setHash is the stamp's
// Materialized; otherwise nothing is written.
func backfillSourceFiles(home string, st *stamp, ents []entry) error {
	if _, err := os.Lstat(filepath.Join(home, metaDir, sourceFilesFile)); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	files := make(map[string]bool, len(st.Files))
	for _, f := range st.Files {
		files[f] = true
	}
	var written []entry
	for _, e := range ents {
		if files[e.rel] || (st.SeedLock != "" && e.rel == path.Join(st.Component, lockFileName)) {
			written = append(written, e)
		}
	}
	if setHash(st.Component, st.Dirs, written) != st.Materialized {
		return nil
	}
	return writeSourceFiles(home, st.Component, st.Materialized, written)
}

// SourceFiles returns the files Prepare materialized from the source
// (the component's and its local modules' files and the lock file seeded
// from the source; no generated file), by slash path relative to Dir
// ("main.tf", "../modules/net/main.tf"), each mapped to a digest of its
// content and mode: compare two, never parse one. Two Workdirs whose
// SourceDigests differ differ in the files whose digests do, or in the
// layout alone where none does. It reads a record the build wrote beside
// the stamp, and returns nil when there is none for this build (a home
// last built by an older release, until its next build) or it cannot be
// read. Call it while w is open.
func (w *Workdir) SourceFiles() map[string]string {
	b, err := atomicfile.ReadFile(filepath.Join(w.Home, metaDir, sourceFilesFile), atomicfile.Record)
	if err != nil {
		return nil
	}
	var rec sourceFilesRecord
	if json.Unmarshal(b, &rec) != nil || rec.Version != sourceFilesVersion || rec.Materialized != w.SourceDigest || rec.Files == nil {
		return nil
	}
	return rec.Files
}
