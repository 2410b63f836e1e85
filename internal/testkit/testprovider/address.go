package testprovider

import "runtime"

// The provider's address. The host is reserved for tests: nothing resolves
// it, so Terraform can only install the provider from a mirror or a loopback
// registry that a test sets up.
const (
	Host      = "registry.tfisolate.test"
	Namespace = "tfisolate"
	Type      = "tfitest"
	Source    = Host + "/" + Namespace + "/" + Type
)

// Platform is the current runtime platform in Terraform's OS_ARCH form
// ("linux_amd64"): the only platform Build produces.
const Platform = runtime.GOOS + "_" + runtime.GOARCH

// ExecutableName is the name of the provider executable inside a package of
// the given version, as Terraform looks for it: terraform-provider-tfitest_vVER.
func ExecutableName(version string) string {
	return "terraform-provider-" + Type + "_v" + version + exeSuffix
}

// ZipName is the conventional package file name for a version on a platform
// ("linux_amd64"): terraform-provider-tfitest_VER_OS_ARCH.zip.
func ZipName(version, platform string) string {
	return "terraform-provider-" + Type + "_" + version + "_" + platform + ".zip"
}

// exeSuffix is what Terraform (and the OS) require executables to end with.
var exeSuffix = map[bool]string{true: ".exe"}[runtime.GOOS == "windows"]
