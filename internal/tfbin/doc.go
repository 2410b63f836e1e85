// Package tfbin finds a terraform binary for the SDK and its tests. It is a
// thin wrapper kept for existing callers: the logic (PATH first, then a
// pinned release installed once across processes under a flock, into a temp
// dir renamed into place) lives in package engine, which also finds and
// identifies OpenTofu. New code should use engine.Find and engine.Detect.
package tfbin
