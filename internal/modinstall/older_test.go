package modinstall

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modmanifest"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// TestOlder is the "never older" comparison: which of a unit's
// installed modules a set holds in an older version.
func TestOlder(t *testing.T) {
	const src = "registry.tfisolate.test/tfisolate/greet/tfitest"
	rec := func(key, source, ver string) modmanifest.Record {
		return modmanifest.Record{Key: key, Source: source, Version: ver, Dir: ".terraform/modules/" + key}
	}
	root := modmanifest.Record{Key: "", Source: "", Dir: "."}
	calls := []modtree.Call{{Key: "greet", Source: src, Version: ">= 1.0.0"}, {Key: "pinned", Source: src, Version: "~> 1.0.0"}}
	cases := []struct {
		name      string
		have, set []modmanifest.Record
		want      []string
	}{
		{name: "set older", have: []modmanifest.Record{root, rec("greet", src, "1.1.0")}, set: []modmanifest.Record{root, rec("greet", src, "1.0.0")},
			want: []string{"module.greet " + src + ": 1.1.0, the set has 1.0.0"}},
		{name: "set newer", have: []modmanifest.Record{rec("greet", src, "1.0.0")}, set: []modmanifest.Record{rec("greet", src, "1.1.0")}},
		{name: "same", have: []modmanifest.Record{rec("greet", src, "1.1.0")}, set: []modmanifest.Record{rec("greet", src, "1.1.0")}},
		{name: "patch and prerelease order", have: []modmanifest.Record{rec("greet", src, "1.0.10")}, set: []modmanifest.Record{rec("greet", src, "1.0.10-rc.1")},
			want: []string{"module.greet " + src + ": 1.0.10, the set has 1.0.10-rc.1"}},
		{name: "another source", have: []modmanifest.Record{rec("greet", src, "1.1.0")}, set: []modmanifest.Record{rec("greet", src+"x", "1.0.0")}},
		{name: "not in the set", have: []modmanifest.Record{rec("greet", src, "1.1.0")}, set: []modmanifest.Record{rec("other", src, "1.0.0")}},
		{name: "no versions (not a registry module)", have: []modmanifest.Record{rec("greet", "git::https://example.test/m.git", "")},
			set: []modmanifest.Record{rec("greet", "git::https://example.test/m.git", "")}},
		{name: "unparsable version", have: []modmanifest.Record{rec("greet", src, "latest")}, set: []modmanifest.Record{rec("greet", src, "1.0.0")}},
		{name: "the constraint no longer allows the unit's", have: []modmanifest.Record{rec("pinned", src, "1.1.0")}, set: []modmanifest.Record{rec("pinned", src, "1.0.5")}},
		{name: "the constraint allows the unit's", have: []modmanifest.Record{rec("pinned", src, "1.0.7")}, set: []modmanifest.Record{rec("pinned", src, "1.0.5")},
			want: []string{"module.pinned " + src + ": 1.0.7, the set has 1.0.5"}},
		{name: "nested module, constraint unknown", have: []modmanifest.Record{rec("greet.inner", src, "2.0.0")}, set: []modmanifest.Record{rec("greet.inner", src, "1.9.0")},
			want: []string{"module.greet.inner " + src + ": 2.0.0, the set has 1.9.0"}},
		{name: "several, sorted; newer ones ignored",
			have: []modmanifest.Record{rec("z", src, "3.0.0"), rec("greet", src, "1.2.0"), rec("b", src, "1.0.0")},
			set:  []modmanifest.Record{rec("greet", src, "1.1.0"), rec("b", src, "1.5.0"), rec("z", src, "2.0.0")},
			want: []string{"module.greet " + src + ": 1.2.0, the set has 1.1.0", "module.z " + src + ": 3.0.0, the set has 2.0.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Older(tc.have, tc.set, calls))
		})
	}

	require.True(t, SameCalls([]modmanifest.Record{root, rec("greet", src, "1.1.0")}, []modmanifest.Record{rec("greet", src, "1.0.0"), root}))
	require.False(t, SameCalls([]modmanifest.Record{root, rec("greet", src, "1.1.0")}, []modmanifest.Record{root, rec("greet", src+"x", "1.1.0")}))
	require.False(t, SameCalls([]modmanifest.Record{root, rec("greet", src, "1.1.0")}, []modmanifest.Record{root}))
}
