package pluginc

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
)

// Fallback says that a package was installed from a source other than
// the first one that would have served it, because that one failed: a
// network mirror that is down, answers 500 or sends a package that fails
// its check. The cache goes on with its next source, as Terraform does
// with a provider_installation block's methods; a host learns of it
// through WithFallback.
type Fallback struct {
	// Package is the package installed.
	Package PackageID
	// Source names the source that failed, as its String does: a network
	// mirror by its URL, without credentials, query or fragment.
	Source string
	// Listing is set when the source failed to list the provider's
	// versions, so it was never asked for the package (a listing is kept
	// for the Cache's life, so later installs of the provider pass it by
	// too, each reported); otherwise its Fetch of the package failed.
	Listing bool
	// Err is the source's error, every URL in it without credentials,
	// query or fragment.
	Err string
	// Used names the source the package was installed from.
	Used string
}

// String says which source failed, how, and where the package came from
// instead.
func (f Fallback) String() string {
	what := "failed to deliver " + f.Package.String()
	if f.Listing {
		what = "failed to list the versions of " + f.Package.Provider.String()
	}
	return fmt.Sprintf("%s %s (%s); %s was installed from %s instead", f.Source, what, f.Err, f.Package, f.Used)
}

type fallbackKey struct{}

// WithFallback returns a context under which Ensure calls fn for every
// package it gets installed from a source other than the first that
// would have served it, once per source that failed before it (see
// Fallback), so a host can say that its mirror is down rather than
// leave it to the cache's own logger. Every Ensure call that gets the
// package from that install is told, a caller that waited for another
// caller's install included; a package already in the cache reports
// nothing. fn may be called from several goroutines at once and must not
// block for long (net/http/httptrace hooks a request the same way).
func WithFallback(ctx context.Context, fn func(Fallback)) context.Context {
	return context.WithValue(ctx, fallbackKey{}, fn)
}

// reportFallbacks calls ctx's WithFallback function, if any, for each of
// fbs.
func reportFallbacks(ctx context.Context, fbs []Fallback) {
	if len(fbs) == 0 {
		return
	}
	if fn, _ := ctx.Value(fallbackKey{}).(func(Fallback)); fn != nil {
		for _, f := range fbs {
			fn(f)
		}
	}
}

// urlInText finds URLs in an error message.
var urlInText = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// scrubURLs drops the credentials, query and fragment of every URL in s:
// a mirror's URL may carry a token in either, and what a Fallback says
// goes to logs, events and reports (invariant 16).
func scrubURLs(s string) string {
	return urlInText.ReplaceAllStringFunc(s, scrubURL)
}

// scrubURL is one URL without credentials, query or fragment; a text
// that does not parse as a URL is cut to its scheme and host, or, failing
// that, said to be hidden.
func scrubURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
