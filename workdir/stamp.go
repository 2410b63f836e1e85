package workdir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/format"
)

// stampVersion is the stamp's format. Version 2 records the
// Spec.ModuleSources a layout was found with as a digest
// (ModuleSourcesDigest), never the values: a source evaluated from a
// variable may carry a credential. A version 1 stamp, which kept them in
// clear, is still read (its values turned into the digest as it is read,
// and dropped from the stamp the next build writes). A newer version is
// refused by name (stampNewer), never rebuilt over: a change to what the
// stamp holds that an older reader must not ignore bumps it.
const stampVersion = 2

// stamp records what a workdir was materialized from. A complete stamp is
// written last; an incomplete one is written before a refresh starts
// touching files, so a refresh killed half-way is redone (and knows every
// file it may have left behind) the next time.
type stamp struct {
	Version   int      `json:"version"`
	Complete  bool     `json:"complete"`
	Source    string   `json:"source"`            // absolute component dir
	Engine    string   `json:"engine,omitempty"`  // the configuration rule followed: "" terraform's, "tofu" OpenTofu's
	Base      string   `json:"base"`              // absolute common ancestor of the source set
	Component string   `json:"component"`         // slash path of the component under Base and under src/
	Dirs      []string `json:"dirs"`              // slash dirs under Base that make up the source set
	Missing   []string `json:"missing,omitempty"` // local module dirs called but missing; one appearing changes the layout
	Hash      string   `json:"hash"`              // setHash of the source set, with each copied file's digest as written
	Files     []string `json:"files"`             // slash paths under src/ materialized from the source
	Generated []string `json:"generated"`         // slash paths under src/ of generated files
	SeedLock  string   `json:"seed_lock,omitempty"`
	Moves     []string `json:"moves,omitempty"` // earlier component positions whose instance data may still need moving
	// Materialized is setHash of what the build wrote from the source
	// (copied files and the seeded lock file, as written). Stamps from
	// before it existed lack it and are rebuilt once.
	Materialized string `json:"materialized,omitempty"`
	// Reads are the component's local terraform_remote_state paths,
	// relative to it; ReadsKnown is set by builds that look for them
	// (stamps from before are rebuilt once). Inputs maps each state file
	// copied as such an input (slash path under src/) to the SHA-256 of
	// the copy: an untouched copy is the source's, not the instance's.
	Reads      []string          `json:"reads,omitempty"`
	ReadsKnown bool              `json:"reads_known,omitempty"`
	Inputs     map[string]string `json:"inputs,omitempty"`
	// ModuleSourcesDigest is sourcesDigest of the Spec.ModuleSources the
	// layout was discovered with: other values may select other module
	// dirs. The values themselves are never written (a source evaluated
	// from a variable may hold a token).
	ModuleSourcesDigest string `json:"module_sources_digest,omitempty"`
	// ModuleSources is what a version 1 stamp held in ModuleSourcesDigest's
	// place, in clear; only read.
	ModuleSources map[string]string `json:"module_sources,omitempty"`
}

// sourcesDigest is the stamp's digest of Spec.ModuleSources: "" when
// there are none, else a SHA-256 over every name and value, sorted.
func sourcesDigest(sources map[string]string) string {
	if len(sources) == 0 {
		return ""
	}
	h := sha256.New()
	for _, n := range slices.Sorted(maps.Keys(sources)) {
		fmt.Fprintf(h, "%d:%s\x00%d:%s\n", len(n), n, len(sources[n]), sources[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// digest is Workdir.Digest: what the build materialized from the source
// plus the generated files.
func digest(st *stamp, files []genFile) string {
	h := sha256.New()
	fmt.Fprintf(h, "tfisolate-workdir-digest-v1\x00%s\n", st.Materialized)
	for _, g := range files {
		fmt.Fprintf(h, "%s\x00%x\n", g.name, sha256.Sum256(g.data))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func stampPath(home string) string { return filepath.Join(home, metaDir, stampFile) }

// readStamp returns nil when there is no usable stamp: none, unreadable,
// of another version, or listing a path that is not local and clean
// (stampProblem). The home is then materialized again from the source.
// A version 1 stamp is read as version 2 (its module sources turned into
// their digest). A stamp left readable by others (an older release
// wrote it 0644) is narrowed to 0600.
func readStamp(home string) *stamp {
	b, err := atomicfile.ReadFile(stampPath(home), atomicfile.Record)
	if err != nil {
		return nil
	}
	var st stamp
	if json.Unmarshal(b, &st) != nil || (st.Version != stampVersion && st.Version != 1) || stampProblem(&st) != "" {
		return nil
	}
	if st.Version == 1 {
		st.ModuleSourcesDigest, st.ModuleSources = sourcesDigest(st.ModuleSources), nil
	}
	return &st
}

// stampNewer is the *format.NewerError of a stamp a newer release wrote
// in home, nil otherwise: such a home is neither read nor rebuilt by
// this release (a rebuild would overwrite what the newer one recorded).
func stampNewer(home string) error {
	b, err := os.ReadFile(stampPath(home))
	if err != nil {
		return nil
	}
	if _, err := format.Read(stampPath(home), b, stampVersion); errors.Is(err, format.ErrNewer) {
		return err
	}
	return nil
}

// writeStamp writes st, 0600, atomically. It never writes module sources
// in clear, only their digest.
func writeStamp(home string, st *stamp) error {
	st.Version = stampVersion
	st.ModuleSources = nil
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(stampPath(home), b, atomicfile.Record); err != nil {
		return fmt.Errorf("write stamp: %w", err)
	}
	return nil
}
