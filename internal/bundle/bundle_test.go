package bundle

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// record stands for the runner's plan record: what a plan was made from.
type record struct {
	Plan string `json:"plan"`
	Lock string `json:"lock_file"`
	Args string `json:"args"`
}

func (r record) PlanSHA256() string { return r.Plan }
func (r record) LockSHA256() string { return r.Lock }

var testKey = []byte("fleet-bundle-key")

// members is a bundle's content: a plan, its JSON and, unless noLock, a
// lock file.
func members(noLock bool) map[string][]byte {
	m := map[string][]byte{PlanMember: []byte("saved plan"), PlanJSONMember: []byte(`{"resource_changes":[]}`)}
	if !noLock {
		m[LockMember] = []byte("# lock file\n")
	}
	return m
}

// recordOf is the record the members were made with.
func recordOf(m map[string][]byte) record {
	r := record{Plan: sha256Hex(m[PlanMember]), Args: "args"}
	if lock, ok := m[LockMember]; ok {
		r.Lock = sha256Hex(lock)
	}
	return r
}

// writeTest writes a bundle of unit "stack/item" on an http backend at a
// new path and returns the path.
func writeTest(t *testing.T, key []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bundles", "stack_item")
	ms := members(false)
	_, err := Write(p, &Manifest[record]{Unit: "stack/item", Record: recordOf(ms), Backend: "http"}, ms, key)
	require.NoError(t, err)
	return p
}

// entry is one tar member of a bundle written by writeRaw.
type entry struct {
	name string
	data []byte
	flag byte // tar.TypeReg when 0
}

// readRaw reads the bundle at p without checking it.
func readRaw(t *testing.T, p string) (*Manifest[record], []entry) {
	t.Helper()
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	tr := tar.NewReader(bytes.NewReader(raw))
	var m Manifest[record]
	var out []entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		if h.Name == ManifestMember {
			require.NoError(t, json.Unmarshal(data, &m))
			continue
		}
		out = append(out, entry{name: h.Name, data: data})
	}
	return &m, out
}

// writeRaw writes m (as it is: no digest computed) and entries at p.
func writeRaw(t *testing.T, p string, m *Manifest[record], entries ...entry) {
	t.Helper()
	mb, err := json.Marshal(m)
	require.NoError(t, err)
	writeRawManifest(t, p, mb, entries...)
}

// writeRawManifest writes the manifest mb, as it is, and entries at p.
func writeRawManifest(t *testing.T, p string, mb []byte, entries ...entry) {
	t.Helper()
	var err error
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, e := range append([]entry{{name: ManifestMember, data: mb}}, entries...) {
		h := &tar.Header{Name: e.name, Mode: 0o600, Size: int64(len(e.data)), Typeflag: e.flag}
		if e.flag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size, h.Linkname = 0, "target"
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err = tw.Write(e.data)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, os.WriteFile(p, out.Bytes(), 0o600))
}

// reseal gives m a valid digest and no MAC, as someone without the key
// could.
func reseal(m *Manifest[record]) {
	m.MAC = ""
	m.Digest = sha256Hex(m.content())
}

// TestWriteRead: what Write writes, Read gives back whole, with or
// without a lock file and a key; the file is 0600 in a 0700 dir Write
// made, and says when and where it was made.
func TestWriteRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noLock bool
		key    []byte
	}{
		{name: "keyed", key: testKey},
		{name: "no key"},
		{name: "no lock file", noLock: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new")
			p := Path(dir, "stack_item-0123")
			ms := members(tc.noLock)
			before := time.Now().UTC()
			m := &Manifest[record]{Unit: "stack/item", Record: recordOf(ms), Backend: "s3"}
			size, err := Write(p, m, ms, tc.key)
			require.NoError(t, err)

			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a bundle holds what the plan holds")
			require.Equal(t, int64(size), fi.Size())
			di, err := os.Stat(dir)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o700), di.Mode().Perm())
			require.Equal(t, Format, m.Format)
			require.Equal(t, tc.key != nil, m.MAC != "", "a MAC exactly when there is a key")

			got, gotMembers, err := Read[record](p, "stack/item", tc.key)
			require.NoError(t, err)
			require.Equal(t, ms, gotMembers)
			require.Equal(t, recordOf(ms), got.Record)
			require.Equal(t, "s3", got.Backend)
			require.Equal(t, m.Digest, got.Digest)
			require.False(t, got.Made.Before(before.Truncate(time.Second)), "made %s, written after %s", got.Made, before)
			host, _ := os.Hostname()
			require.Equal(t, host, got.Host)
		})
	}
}

// TestPath: a unit's bundle is NAME.tfplan-bundle in the dir.
func TestPath(t *testing.T) {
	require.Equal(t, filepath.Join("out", "plans", "stack_item-0a1b.tfplan-bundle"), Path(filepath.Join("out", "plans"), "stack_item-0a1b"))
}

// TestKeys: a key and a MAC go together. A keyed bundle read without a
// key, or an unkeyed one read with a key (a downgrade), is refused
// saying what to do; a keyed one read with another key is refused; the
// same key, or none on both sides, reads.
func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		name       string
		write, use []byte
		want       string // "" for no error
	}{
		{name: "same key", write: testKey, use: testKey},
		{name: "no key either side"},
		{name: "keyed, read without", write: testKey, want: "exported with a key), and no key was given: give ImportPlan the key ExportPlan had"},
		{name: "unkeyed, read with a key", use: testKey, want: "exported without a key), and a key was given: export it again with the key"},
		{name: "another key", write: testKey, use: []byte("another key"), want: "its MAC does not match the key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTest(t, tc.write)
			_, _, err := Read[record](p, "stack/item", tc.use)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var refused *RefusedError
			require.ErrorAs(t, err, &refused)
			require.Equal(t, p, refused.Path)
			require.False(t, refused.LocalState)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestMACIsNotJustTheDigest: a bundle altered and resealed with a valid
// digest (what anyone can compute) and the old MAC is refused by its
// MAC; with the MAC dropped, by the key-and-MAC rule.
func TestMACIsNotJustTheDigest(t *testing.T) {
	p := writeTest(t, testKey)
	m, entries := readRaw(t, p)
	mac := m.MAC
	m.Backend = "gcs"
	reseal(m)
	m.MAC = mac
	writeRaw(t, p, m, entries...)
	_, _, err := Read[record](p, "stack/item", testKey)
	require.ErrorContains(t, err, "its MAC does not match the key")

	m.MAC = ""
	writeRaw(t, p, m, entries...)
	_, _, err = Read[record](p, "stack/item", testKey)
	require.ErrorContains(t, err, "it carries no MAC")
}

// TestRefused: each way a file is not a bundle, or not this one, or not
// intact, is refused with a *RefusedError naming the file and what is
// wrong.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alter func(t *testing.T, p string) // the intact, unkeyed bundle at p
		unit  string                       // "stack/item" when ""
		want  string
		local bool
	}{
		{name: "missing", alter: func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, want: "no such file"},
		{name: "a dir", alter: func(t *testing.T, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o700))
		}, want: "not a regular file"},
		{name: "not a tar", alter: func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, bytes.Repeat([]byte("plan "), 200), 0o600))
		}, want: "not a plan bundle"},
		{name: "empty", alter: func(t *testing.T, p string) { require.NoError(t, os.WriteFile(p, nil, 0o600)) }, want: "no readable manifest"},
		{name: "unexpected member", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			writeRaw(t, p, m, append(entries, entry{name: "../../etc/cron.d/x", data: []byte("x")})...)
		}, want: `unexpected member "../../etc/cron.d/x"`},
		{name: "repeated member", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			writeRaw(t, p, m, append(entries, entries[0])...)
		}, want: "is repeated or not a file"},
		{name: "member not a file", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			for i := range entries {
				if entries[i].name == LockMember {
					entries[i].flag = tar.TypeSymlink
				}
			}
			writeRaw(t, p, m, entries...)
		}, want: `member "lock.hcl" is repeated or not a file`},
		{name: "too large", alter: func(t *testing.T, p string) {
			var out bytes.Buffer
			tw := tar.NewWriter(&out)
			// The header alone: Read refuses before it reads the data.
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: PlanMember, Mode: 0o600, Size: maxBytes + 1, Typeflag: tar.TypeReg}))
			require.NoError(t, os.WriteFile(p, out.Bytes(), 0o600))
		}, want: "larger than 1073741824 bytes"},
		{name: "another format", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			m.Format = "tfisolate-state/2"
			reseal(m)
			writeRaw(t, p, m, entries...)
		}, want: `format "tfisolate-state/2" is not a plan bundle's (want "tfisolate-plan-bundle/2")`},
		{name: "a format version spelled oddly", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			m.Format = "tfisolate-plan-bundle/02"
			reseal(m)
			writeRaw(t, p, m, entries...)
		}, want: `format "tfisolate-plan-bundle/02" is not a plan bundle's`},
		{name: "an older format", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			m.Format = "tfisolate-plan-bundle/1"
			reseal(m)
			writeRaw(t, p, m, entries...)
		}, want: "written by an older release: format 1; this release reads format 2 only"},
		{name: "manifest altered", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			m.Record.Args = "other args"
			writeRaw(t, p, m, entries...)
		}, want: "the manifest does not match its digest (damaged or altered)"},
		{name: "another unit's", unit: "stack/other", want: "it is the plan of unit stack/item, not of stack/other"},
		{name: "no backend recorded", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			m.Backend = ""
			reseal(m)
			writeRaw(t, p, m, entries...)
		}, want: "it records no backend (altered?)"},
		{name: "local backend recorded", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			m.Backend = "local"
			reseal(m)
			writeRaw(t, p, m, entries...)
		}, want: "it says its state is in the local backend of the machine that planned", local: true},
		{name: "member missing", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			writeRaw(t, p, m, entries[1:]...)
		}, want: "the manifest lists 3 members, the bundle holds 2"},
		{name: "member altered", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			for i := range entries {
				if entries[i].name == PlanJSONMember {
					entries[i].data[3] ^= 1
				}
			}
			writeRaw(t, p, m, entries...)
		}, want: "member plan.json does not match the manifest (damaged or altered)"},
		{name: "plan not the record's", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			m.Record.Plan = sha256Hex([]byte("another plan"))
			reseal(m)
			writeRaw(t, p, m, entries...)
		}, want: "its plan or lock file is not the one its record describes"},
		{name: "lock file not the record's", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			m.Record.Lock = ""
			reseal(m)
			writeRaw(t, p, m, entries...)
		}, want: "its plan or lock file is not the one its record describes"},
		{name: "no plan", alter: func(t *testing.T, p string) {
			m, entries := readRaw(t, p)
			var kept []entry
			for _, e := range entries {
				if e.name != PlanMember {
					kept = append(kept, e)
				}
			}
			delete(m.Files, PlanMember)
			reseal(m)
			writeRaw(t, p, m, kept...)
		}, want: "its plan or lock file is not the one its record describes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTest(t, nil)
			if tc.alter != nil {
				tc.alter(t, p)
			}
			unit := tc.unit
			if unit == "" {
				unit = "stack/item"
			}
			m, got, err := Read[record](p, unit, nil)
			require.Nil(t, m)
			require.Nil(t, got)
			var refused *RefusedError
			require.True(t, errors.As(err, &refused), "%v", err)
			require.Equal(t, p, refused.Path)
			require.Equal(t, tc.local, refused.LocalState)
			require.ErrorContains(t, err, p+": ")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestNotCovered: when and where a bundle was made are not under its
// digest or MAC, so they may change; everything else is.
func TestNotCovered(t *testing.T) {
	p := writeTest(t, testKey)
	m, entries := readRaw(t, p)
	m.Made, m.Host = m.Made.Add(-time.Hour), "elsewhere"
	writeRaw(t, p, m, entries...)
	got, _, err := Read[record](p, "stack/item", testKey)
	require.NoError(t, err)
	require.Equal(t, "elsewhere", got.Host)
}

// TestContent pins what the digest and the MAC cover, byte for byte: a
// bundle made by one version must verify in the next. An empty backend
// is left out, as an older export's manifest had none.
func TestContent(t *testing.T) {
	m := &Manifest[record]{Format: Format, Unit: "stack/item", Record: record{Plan: "p", Lock: "l", Args: "<a&b>"}, Backend: "http",
		Files: map[string]string{PlanMember: "1", LockMember: "2"}, Digest: "ignored", MAC: "ignored", Made: time.Unix(1, 0), Host: "h"}
	require.Equal(t, `{"format":"tfisolate-plan-bundle/2","unit":"stack/item","meta":{"plan":"p","lock_file":"l","args":"\u003ca\u0026b\u003e"},`+
		`"backend":"http","files":{"lock.hcl":"2","plan.tfplan":"1"}}`, string(m.content()))
	m.Backend = ""
	require.Equal(t, `{"format":"tfisolate-plan-bundle/2","unit":"stack/item","meta":{"plan":"p","lock_file":"l","args":"\u003ca\u0026b\u003e"},`+
		`"files":{"lock.hcl":"2","plan.tfplan":"1"}}`, string(m.content()))
	// openssl dgst -sha256 -hmac fleet-bundle-key of the content above.
	require.Equal(t, "083f6045640f7d5e023cfd0ea003aef4c660065c7c38ec4eebc097e8aac242a4", mac(testKey, m.content()))
}
