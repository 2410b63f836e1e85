package workdir

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIDIsReadableAndDistinctPerInstance(t *testing.T) {
	seen := map[string]string{}
	for i := 1; i <= 12; i++ {
		inst := fmt.Sprintf("elasticache/redis-cluster-%d", i)
		id, err := ID("plat-ue2-dev", inst)
		require.NoError(t, err)
		require.Contains(t, id, "plat-ue2-dev")
		require.Contains(t, id, fmt.Sprintf("redis-cluster-%d", i))
		require.NotContains(t, seen, id, "instance %s collides with %s", inst, seen[id])
		seen[id] = inst
	}
	id, err := ID("plat-ue2-dev", "elasticache/redis-cluster-7")
	require.NoError(t, err)
	again, err := ID("plat-ue2-dev", "elasticache/redis-cluster-7")
	require.NoError(t, err)
	require.Equal(t, id, again, "IDs are stable")
	require.Regexp(t, `^plat-ue2-dev__elasticache_redis-cluster-7-[0-9a-f]{12}$`, id)
}

func TestIDInjective(t *testing.T) {
	pairs := [][2]string{
		{"a", "b/c"}, {"a", "b-c"}, {"a", "b_c"}, {"a", "b.c"}, {"a", "b c"},
		{"a/b", "c"}, {"a", "b/c/d"}, {"a_b", "c"}, {"a", "B/c"},
		{"stack", "Redis"}, {"stack", "redis"}, {"s", "ü"}, {"s", "é"}, {"s", "--"}, {"s", "__"},
		{strings.Repeat("x", 60), "y"}, {strings.Repeat("x", 61), "y"},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		id, err := ID(p[0], p[1])
		require.NoError(t, err, "%q", p)
		// Case-insensitive filesystems (macOS, Windows) must keep them apart too.
		key := strings.ToLower(id)
		require.NotContains(t, seen, key, "%q collides with %q", p, seen[key])
		seen[key] = p
	}
}

func TestIDIsSafeEverywhere(t *testing.T) {
	for _, p := range [][2]string{
		{"CON", "NUL"}, {"con.txt", "aux"}, {"a.", "b "}, {"...x", "y..."}, {"LPT1", "COM1.tf"},
		{"ab:c", "c*d?e\"f<g>h|"}, {strings.Repeat("long-", 200), strings.Repeat("名前/", 100) + "z"},
		{" x", "-y"}, {"ü", "日本"},
	} {
		id, err := ID(p[0], p[1])
		require.NoError(t, err, "%q", p)
		checkSafeID(t, id)
	}
}

func checkSafeID(t testing.TB, id string) {
	t.Helper()
	if len(id) == 0 || len(id) > 111 {
		t.Fatalf("ID %q has length %d", id, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(isLetter(c) || c >= '0' && c <= '9' || c == '-' || c == '_') {
			t.Fatalf("ID %q has unsafe byte %q", id, c)
		}
	}
	if !filepath.IsLocal(id) || filepath.Base(id) != id {
		t.Fatalf("ID %q is not a single local path element", id)
	}
	if !strings.Contains(id, "__") {
		t.Fatalf("ID %q lacks the stack separator (which keeps it from being a device name)", id)
	}
}

func TestIDRejectsBadNames(t *testing.T) {
	long := strings.Repeat("a", maxNameLen+1)
	for _, tc := range []struct{ stack, instance, field, reason string }{
		{"", "x", "stack", "is empty"},
		{"s", "", "instance", "is empty"},
		{"/abs", "x", "stack", "absolute"},
		{"s", "/etc/passwd", "instance", "absolute"},
		{"s", "C:/x", "instance", "absolute"},
		{"s", "..", "instance", `".."`},
		{"s", "../../etc", "instance", `".."`},
		{"s", "a/../../b", "instance", `".."`},
		{"..", "x", "stack", `".."`},
		{"s", "a/./b", "instance", `"."`},
		{"s", "a//b", "instance", "empty path element"},
		{"s", "a/", "instance", "empty path element"},
		{"s", `a\b`, "instance", "backslash"},
		{"s", "a\x00b", "instance", "control"},
		{"s", "a\nb", "instance", "control"},
		{"s", "\xff", "instance", "UTF-8"},
		{long, "x", "stack", "longer"},
	} {
		_, err := ID(tc.stack, tc.instance)
		require.Error(t, err, "%q %q", tc.stack, tc.instance)
		require.ErrorIs(t, err, ErrInvalid)
		var ie *InputError
		require.True(t, errors.As(err, &ie))
		require.Equal(t, tc.field, ie.Field)
		require.Contains(t, err.Error(), tc.reason)
		bad := tc.stack
		if tc.field == "instance" {
			bad = tc.instance
		}
		require.Contains(t, err.Error(), fmt.Sprintf("%q", bad), "the error names the input")
	}
}

func FuzzID(f *testing.F) {
	for _, p := range [][2]string{
		{"plat-ue2-dev", "elasticache/redis-cluster-1"}, {"a", "b/c"}, {"a", "b-c"}, {"a/b", "c"},
		{"CON", "x"}, {"s", ".."}, {"s", "a//b"}, {"", ""}, {"s", "ü/日本"}, {"a.", "b "},
	} {
		f.Add(p[0], p[1])
	}
	var mu sync.Mutex
	seen := map[string][2]string{}
	f.Fuzz(func(t *testing.T, stack, instance string) {
		id, err := ID(stack, instance)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		checkSafeID(t, id)
		again, _ := ID(stack, instance)
		if again != id {
			t.Fatalf("ID not deterministic: %q vs %q", id, again)
		}
		mu.Lock()
		defer mu.Unlock()
		key := strings.ToLower(id)
		if prev, ok := seen[key]; ok && prev != [2]string{stack, instance} {
			t.Fatalf("%q and %q both map to %q", prev, [2]string{stack, instance}, id)
		}
		seen[key] = [2]string{stack, instance}
	})
}
