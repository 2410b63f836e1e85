// Package tfbin finds a terraform binary for the SDK and its tests.
//
// Find looks on PATH first (hc-install's fs.AnyVersion) and only then
// installs a pinned release into a directory of its own. hc-install unpacks
// in place with no lock, so the install runs under an exclusive flock in that
// directory, into a temp dir that is renamed into place: concurrent processes
// share one install and a killed install is never mistaken for a finished one.
package tfbin
