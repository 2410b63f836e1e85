// Package naive runs Terraform the ways users run it today, without
// tfisolate, so the example's -compare mode and bench/ can put today's
// outcomes beside the SDK's on the same instances.
//
// The approaches are the rows of the README's table "The problem":
// parallel runs in one shared source directory with Terraform's plugin
// cache, per-process TF_DATA_DIR, the hand-written workaround (TF_DATA_DIR
// plus a plugin cache warmed by one serial init), and plain sequential
// runs. They are meant to
// show failures, not to avoid them: nothing here adds locking.
package naive
