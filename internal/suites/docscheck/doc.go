// Package docscheck keeps the prose true to the tree. It has no code,
// only tests that read README.md, ARCHITECTURE.md and docs/*.md, and the
// imports of the repository's Go files.
//
// Guarantees (TestDocsPointAtWhatExists):
//
//   - Every relative link in README.md and docs/ names a file or directory
//     of the repository, and every #anchor names a heading of the page it
//     points at (GitHub's rule: lower case, punctuation dropped, spaces
//     as dashes, a repeated heading numbered).
//   - A link whose text names tests (TestX, FuzzX, ExampleX) points at a
//     Go file that defines each of them.
//   - Every test, fuzz target or example named anywhere in those pages
//     and in ARCHITECTURE.md is defined in some _test.go file of the
//     repository, so moving or renaming a test without its docs fails
//     here, naming the page and the test.
//
// Guarantees (TestArchitectureImportRules), ARCHITECTURE.md's import
// rules read from the non-test files themselves:
//
//   - No production package (runner, workdir, pluginc, cliconfig and every
//     package under internal/ outside internal/testkit, internal/harness
//     and internal/suites) imports the test bench.
//   - workdir, pluginc and cliconfig import no other public package but
//     cliconfig (pluginc); the mechanisms under internal/ import none but
//     internal/providerreqs, which imports pluginc.
package docscheck
