package workdir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// snapshot maps every file, dir and symlink under dir to its mode, content
// digest and mtime, so any write at all shows up as a difference.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := de.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String() + " " + fi.ModTime().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			v += " " + hex.EncodeToString(s[:])
		}
		out[filepath.ToSlash(rel)] = v
		return nil
	}))
	return out
}

// regularFiles returns slash path -> content of every regular file under dir.
func regularFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	}))
	return out
}

func listDir(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func newManager(t testing.TB, opts ...Option) *Manager {
	t.Helper()
	m, err := New(filepath.Join(t.TempDir(), "root"), opts...)
	require.NoError(t, err)
	return m
}

func prepare(t testing.TB, m *Manager, s Spec) *Workdir {
	t.Helper()
	w, err := m.Prepare(context.Background(), s)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// withoutPrefix keeps the entries of files under prefix, with the prefix cut.
func withoutPrefix(files map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// recorder is a slog handler that keeps every record, for tests that
// assert what the manager logs.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// find returns the records whose message starts with prefix, with their
// attributes as strings.
func (r *recorder) find(prefix string) []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]string
	for _, rec := range r.recs {
		if !strings.HasPrefix(rec.Message, prefix) {
			continue
		}
		attrs := map[string]string{"level": rec.Level.String()}
		rec.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		out = append(out, attrs)
	}
	return out
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = nil
}
