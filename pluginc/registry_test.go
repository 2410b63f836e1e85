package pluginc

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// otherPlatform is a platform the tests never run on, so its package only
// shows up as a zh: hash.
func otherPlatform() string {
	if runtime.GOOS == "plan9" {
		return "linux_amd64"
	}
	return "plan9_amd64"
}

// registryFixture is a loopback registry offering the test provider.
type registryFixture struct {
	srv  *testregistry.Server
	p    Provider
	zips map[string]string // version -> zip path for this platform
}

// startRegistry serves versions of the test provider (padded by padding
// bytes) for this platform and a stand-in package for otherPlatform.
func startRegistry(t testing.TB, padding int64, versions []string, opts ...testregistry.Option) *registryFixture {
	t.Helper()
	bin := testprovider.Build(t, testprovider.WithPadding(padding))
	srv := testregistry.Start(t, opts...)
	f := &registryFixture{srv: srv, p: testProvider(t), zips: map[string]string{}}
	for _, v := range versions {
		zp := bin.Zip(t, v)
		f.zips[v] = zp
		require.NoError(t, srv.AddFile(testprovider.Namespace, testprovider.Type, v, testprovider.Platform, zp))
		srv.MustAdd(t, testregistry.Package{Namespace: testprovider.Namespace, Type: testprovider.Type, Version: v,
			Platform: otherPlatform(), Zip: standIn(t, v)})
	}
	return f
}

// standIn is a small package for otherPlatform: a zip holding a text file.
func standIn(t testing.TB, v string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(testprovider.ExecutableName(v))
	require.NoError(t, err)
	_, err = w.Write([]byte("stand-in provider " + v + "\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func (f *registryFixture) key(v string) string {
	return testprovider.Namespace + "/" + testprovider.Type + "/" + v + "/" + testprovider.Platform
}

func (f *registryFixture) open(t testing.TB, dir string, opts ...Option) *Cache {
	t.Helper()
	c, err := Open(dir, append([]Option{WithSource(Registry()), WithHTTPClient(f.srv.HTTPClient())}, opts...)...)
	require.NoError(t, err)
	return c
}

func sha256File(t testing.TB, p string) string {
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return "zh:" + sha256Hex(b)
}

func TestRegistryEnsure(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0", "1.1.0", "2.0.0"})
	c := f.open(t, t.TempDir())
	ctx := context.Background()

	pkgs, err := c.Ensure(ctx, Requirement{Provider: f.p, Constraints: "~> 1.0"})
	require.NoError(t, err)
	require.Len(t, pkgs, 1)
	require.Equal(t, "1.1.0", pkgs[0].Version)
	h1, err := dirhash.HashZip(f.zips["1.1.0"], dirhash.Hash1)
	require.NoError(t, err)
	want := []string{h1, sha256File(t, f.zips["1.1.0"]), "zh:" + sha256Hex(standIn(t, "1.1.0"))}
	slices.Sort(want)
	require.Equal(t, want, pkgs[0].Hashes, "h1: of the package and zh: of every platform")
	require.Equal(t, 1, f.srv.Downloads(f.key("1.1.0")))
	require.Equal(t, int64(1), c.Stats().Downloads)
	require.Equal(t, fileSize(t, f.zips["1.1.0"]), c.Stats().Bytes)

	// Same Cache again: no network at all.
	before := f.srv.Requests()
	again, err := c.Ensure(ctx, Requirement{Provider: f.p, Constraints: "~> 1.0"})
	require.NoError(t, err)
	require.Equal(t, pkgs, again)
	require.Equal(t, before, f.srv.Requests())

	// A fresh Cache (another process) with the locked version: no network either.
	c2 := f.open(t, c.Dir())
	locked, err := c2.Ensure(ctx, Requirement{Provider: f.p, Constraints: "~> 1.0", Locked: "1.1.0"})
	require.NoError(t, err)
	require.Equal(t, pkgs, locked)
	require.Equal(t, before, f.srv.Requests())
	require.Equal(t, Stats{Hits: 1}, c2.Stats())
}

func TestRegistryFaults(t *testing.T) {
	for _, tc := range []struct {
		fault testregistry.Fault
		want  error
		url   string
	}{
		{testregistry.FaultWrongChecksum, ErrChecksum, ".zip"},
		{testregistry.FaultBadSignature, ErrSignature, "SHA256SUMS.sig"},
		{testregistry.FaultTruncated, ErrDownload, ".zip"},
		{testregistry.FaultStatus500, ErrDownload, ".zip"},
	} {
		t.Run(fmt.Sprint(tc.want, tc.fault), func(t *testing.T) {
			f := startRegistry(t, 0, []string{"1.0.0"})
			f.srv.SetFault(tc.fault)
			c := f.open(t, t.TempDir(), fast(1)...)
			_, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
			require.ErrorIs(t, err, tc.want)
			var ie *InstallError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, f.p, ie.Provider)
			require.Equal(t, "1.0.0", ie.Version)
			require.Equal(t, testprovider.Platform, ie.Platform)
			require.True(t, strings.HasPrefix(ie.URL, "https://"+f.srv.Host()+"/"), ie.URL)
			require.True(t, strings.HasSuffix(ie.URL, tc.url), ie.URL)
			msg := err.Error()
			for _, s := range []string{f.p.String(), "1.0.0", testprovider.Platform, ie.URL} {
				require.Contains(t, msg, s)
			}
			requireEmptyCache(t, c)
			require.Zero(t, c.Stats().Downloads)

			// Once the registry behaves, the same cache installs fine.
			f.srv.SetFault(testregistry.FaultNone)
			_, err = c.Ensure(context.Background(), Requirement{Provider: f.p})
			require.NoError(t, err)
		})
	}
}

func TestRegistryToken(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"}, testregistry.WithToken("s3cret"))
	c := f.open(t, t.TempDir(), WithLookupEnv(func(string) (string, bool) { return "", false }))
	_, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.ErrorIs(t, err, ErrDownload)
	require.ErrorContains(t, err, "401")

	var asked []string
	env := func(k string) (string, bool) {
		asked = append(asked, k)
		return "s3cret", k == "TF_TOKEN_registry_tfisolate_test"
	}
	c = f.open(t, t.TempDir(), WithLookupEnv(env))
	_, err = c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.NoError(t, err)
	require.Contains(t, asked, "TF_TOKEN_registry_tfisolate_test")
}

func TestNetworkMirror(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0", "1.1.0"})
	open := func() *Cache {
		c, err := Open(t.TempDir(), WithSource(NetworkMirror(f.srv.MirrorURL())), WithHTTPClient(f.srv.HTTPClient()))
		require.NoError(t, err)
		return c
	}
	c := open()
	pkgs, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.NoError(t, err)
	h1, err := dirhash.HashZip(f.zips["1.1.0"], dirhash.Hash1)
	require.NoError(t, err)
	require.Equal(t, "1.1.0", pkgs[0].Version)
	require.Equal(t, []string{h1}, pkgs[0].Hashes, "mirror hashes are unsigned: only the package's own h1:")

	f.srv.SetFault(testregistry.FaultWrongChecksum)
	c = open()
	_, err = c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.ErrorIs(t, err, ErrChecksum)
	require.ErrorContains(t, err, "terraform-provider-tfitest_1.1.0_"+testprovider.Platform+".zip")
	requireEmptyCache(t, c)
}

func TestSourcesInOrder(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0", "1.1.0"})
	mirror := t.TempDir()
	testprovider.WriteFilesystemMirror(t, mirror, testprovider.Build(t), "1.0.0")
	c, err := Open(t.TempDir(), WithSource(FilesystemMirror(mirror), Registry()), WithHTTPClient(f.srv.HTTPClient()))
	require.NoError(t, err)
	// 1.0.0 is in the first source: the registry is only asked for its list.
	_, err = c.Ensure(context.Background(), Requirement{Provider: f.p, Constraints: "1.0.0"})
	require.NoError(t, err)
	require.Zero(t, f.srv.TotalDownloads())
	// 1.1.0 only the registry has.
	pkgs, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.NoError(t, err)
	require.Equal(t, "1.1.0", pkgs[0].Version)
	require.Equal(t, 1, f.srv.Downloads(f.key("1.1.0")))
}

func TestRegistryPlatforms(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"})
	c := f.open(t, t.TempDir(), WithPlatforms(testprovider.Platform, otherPlatform()))
	pkgs, err := c.Ensure(context.Background(), Requirement{Provider: f.p})
	require.NoError(t, err)
	require.Len(t, pkgs, 2)
	require.Equal(t, testprovider.Platform, pkgs[0].Platform)
	require.Equal(t, otherPlatform(), pkgs[1].Platform)
	h1Here, err := dirhash.HashZip(f.zips["1.0.0"], dirhash.Hash1)
	require.NoError(t, err)
	h1There, err := hashDir(pkgs[1].Dir)
	require.NoError(t, err)
	lock := string(LockFile(pkgs))
	for _, h := range []string{h1Here, h1There, sha256File(t, f.zips["1.0.0"]), "zh:" + sha256Hex(standIn(t, "1.0.0"))} {
		require.Contains(t, lock, `"`+h+`",`)
	}
	require.Equal(t, 1, f.srv.Downloads(f.key("1.0.0")))
	require.Equal(t, 2, f.srv.TotalDownloads())

	_, err = Open(t.TempDir(), WithPlatforms("linux"))
	require.ErrorIs(t, err, ErrInvalidPlatform)
}

func TestLockedHashes(t *testing.T) {
	f := startRegistry(t, 0, []string{"1.0.0"})
	c := f.open(t, t.TempDir())
	ctx := context.Background()
	pkgs, err := c.Ensure(ctx, Requirement{Provider: f.p})
	require.NoError(t, err)
	locks, err := ParseLockFile(LockFile(pkgs))
	require.NoError(t, err)
	_, err = c.Ensure(ctx, locks[0].Requirement())
	require.NoError(t, err, "a package matches its own lock file")

	thisZip := sha256File(t, f.zips["1.0.0"])
	otherZip := "zh:" + sha256Hex(standIn(t, "1.0.0"))
	for _, tc := range []struct {
		locked []string
		ok     bool
	}{
		{[]string{thisZip}, true},
		{[]string{otherZip}, false}, // another platform's zip is no proof
		{[]string{"h1:bogus="}, false},
	} {
		_, err := c.Ensure(ctx, Requirement{Provider: f.p, Locked: "1.0.0", LockedHashes: tc.locked})
		if tc.ok {
			require.NoError(t, err, tc.locked)
			continue
		}
		require.ErrorIs(t, err, ErrChecksum, tc.locked)
		require.ErrorContains(t, err, "lock file")
	}
}
