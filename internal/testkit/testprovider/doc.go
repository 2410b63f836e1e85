// Package testprovider builds and packages tfitest, a real Terraform
// provider (see package provider) that the SDK's tests install and run with
// real Terraform.
//
// Guarantees:
//
//   - Build compiles the provider with `go build` (CGO_ENABLED=0, the test's
//     own GOOS/GOARCH) at most once per test binary and option set; every
//     later call, from any goroutine, gets the same *Binary. No network is
//     needed: the provider's dependencies are the module's own.
//   - WithPadding makes the binary at least n bytes larger with
//     deterministic, incompressible bytes, so two builds are byte-identical
//     and a torn copy of a 20+ MB provider is observable. The padded binary
//     still runs.
//   - Zips (PackageZip, WriteZipFile, Binary.Zip) are deterministic (fixed
//     modification times, one entry), so the zh: hash of a package is the
//     same on every call, and laid out exactly as Terraform expects: one
//     deflated executable terraform-provider-tfitest_vVER (mode 0755) in
//     terraform-provider-tfitest_VER_OS_ARCH.zip. Binary.Zip makes each
//     package once per test binary, atomically, in a helper process
//     (cmd/tfitest-pack) because compression under -race is ten times
//     slower.
//   - WriteFilesystemMirror writes Terraform's packed filesystem-mirror
//     layout, HOST/NAMESPACE/TYPE/terraform-provider-tfitest_VER_OS_ARCH.zip,
//     and CLIConfigFilesystemMirror writes a CLI config that installs this
//     provider only from such a mirror, never from its fictional host; other
//     providers keep Terraform's direct installation.
//
// BuildTo and PackageZip serve programs that are not tests; the package
// does not import testing (the helpers below take the small TB
// interface), so such a program does not link it.
//
// Build, Zip and WriteFilesystemMirror fail the test through tb.Fatalf, so
// call them from the test's goroutine (or join the goroutine and check
// t.Failed). Built binaries live in one temp dir shared by the whole test binary (tests
// of a package share builds, so it cannot be a t.TempDir). Remove it from
// TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testprovider.Cleanup()
//		os.Exit(code)
//	}
package testprovider
