package runner

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/pluginc"
)

// TestMirrorFallbackWarns (issue 36 item 8): the fleet set-up of docs/fleet.md, a
// plugin cache whose sources are a network mirror and then the registry,
// with the mirror stopped: the Run succeeds from the registry, and the
// fallback reaches the runner's logger (Warn), an event
// (PhaseProviderFallback, with its Fallback, in its JSON form too) and
// Report.Warnings, each naming the mirror by its URL (never the
// credentials or query it was given) and the source the package came
// from, once per Run however many units it served.
func TestMirrorFallbackWarns(t *testing.T) {
	w := newWorld(t)
	mirror := httptest.NewTLSServer(http.NotFoundHandler())
	mirror.Close() // the fleet's mirror is down
	host := strings.TrimPrefix(mirror.URL, "https://")
	cache, err := pluginc.Open(filepath.Join(w.dir, "fleet-cache"),
		pluginc.WithSource(pluginc.NetworkMirror("https://fleet:hunter2@"+host+"/?token=hunter3"), pluginc.Registry()),
		pluginc.WithHTTPClient(w.reg.HTTPClientAlso(mirror)), pluginc.WithRetries(0))
	require.NoError(t, err)

	logs := &syncBuffer{}
	rec := &recorder{}
	r, err := New(WithWorkdirs(w.wd), WithPluginCache(cache), WithTerraform(w.tf), WithEvents(rec.add),
		WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	require.NoError(t, err)
	src := w.component(t, "item", itemComponent)
	var units []Unit
	for _, inst := range []string{"a", "b", "c"} {
		units = append(units, Unit{Workdir: workdirSpec("s", inst, src, files(t, map[string]any{"name": inst}, filepath.Join(t.TempDir(), inst+".tfstate")))})
	}
	rep, err := r.Run(testCtx(t), Apply, units...)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Count(Succeeded), "the registry serves what the mirror cannot")

	mirrorName := "network mirror https://" + host + "/"
	var warned []string
	for _, s := range rep.Warnings {
		if strings.Contains(s, mirrorName) {
			warned = append(warned, s)
		}
		require.NotContains(t, s, "hunter", "no credentials or query from the mirror URL")
	}
	require.Len(t, warned, 1, "one warning per Run: %q", rep.Warnings)
	require.Contains(t, warned[0], "installed from provider registry")

	var evs []Event
	for _, ev := range rec.all() {
		if ev.Phase == PhaseProviderFallback {
			evs = append(evs, ev)
		}
	}
	require.NotEmpty(t, evs, "an event carries the fallback")
	fb := evs[0].Fallback
	require.NotNil(t, fb)
	require.Equal(t, mirrorName, fb.Source)
	require.Equal(t, "provider registry", fb.Used)
	require.True(t, fb.Listing, "the stopped mirror could not list the provider")
	require.Equal(t, providerVersion, fb.Package.Version)
	b, err := json.Marshal(evs[0])
	require.NoError(t, err)
	require.NotContains(t, string(b), "hunter")
	var back Event
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, PhaseProviderFallback, back.Phase)
	require.Equal(t, fb, back.Fallback)

	l := logs.String()
	require.Equal(t, 1, strings.Count(l, "provider source failed"), l)
	require.Contains(t, l, "level=WARN")
	require.Contains(t, l, mirrorName)
	require.Contains(t, l, "used=\"provider registry\"")
	require.NotContains(t, l, "hunter")
}
