package modserve

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/go-version"
)

// keyVersion is the version of the server's store keys (storeKey,
// gitKey), bumped when what an entry holds changes meaning, so a store
// filled by another release is never read as this one's.
const keyVersion = "1"

// Module is one module package the server serves: a registry module at
// an exact version, HOST/NAMESPACE/NAME/SYSTEM as its source address
// writes it (the host always given) and VERSION.
type Module struct {
	Host, Namespace, Name, System, Version string
}

// partRE is what the module registry protocol allows in a namespace,
// name or system; hostRE a host name, with an optional port.
var (
	partRE = regexp.MustCompile(`^[0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?$`)
	hostRE = regexp.MustCompile(`^[0-9A-Za-z](?:[0-9A-Za-z.-]{0,251}[0-9A-Za-z])?(?::[0-9]{1,5})?$`)
)

func (m Module) validate() error {
	if !hostRE.MatchString(m.Host) || !strings.Contains(m.Host, ".") && !strings.Contains(m.Host, ":") {
		return fmt.Errorf("%w %s: bad host %q", ErrBadModule, m, m.Host)
	}
	for _, p := range []string{m.Namespace, m.Name, m.System} {
		if !partRE.MatchString(p) {
			return fmt.Errorf("%w %s: bad name part %q", ErrBadModule, m, p)
		}
	}
	v, err := version.NewSemver(m.Version)
	if err != nil {
		return fmt.Errorf("%w %s: version %q: %v", ErrBadModule, m, m.Version, err)
	}
	if v.String() != m.Version {
		return fmt.Errorf("%w %s: version %q is not in its canonical form (%s)", ErrBadModule, m, m.Version, v)
	}
	return nil
}

// Source is the module's source address, HOST/NAMESPACE/NAME/SYSTEM.
func (m Module) Source() string {
	return m.Host + "/" + m.Namespace + "/" + m.Name + "/" + m.System
}

// String is the source address and the version.
func (m Module) String() string { return m.Source() + " " + m.Version }

// storeKey is the module store's key of the package: never one the
// runner's keys (an engine and a set of calls) can be.
func (m Module) storeKey() string {
	return "modserve " + keyVersion + " registry " + m.Source() + " " + m.Version
}

// path is the package's path below the server's tree archives and its
// download answers: HOST/NAMESPACE/NAME/SYSTEM/VERSION.
func (m Module) path() string { return m.Source() + "/" + m.Version }

// RegistryHost returns the host of a registry module source address
// (HOST/NAMESPACE/NAME/SYSTEM, or NAMESPACE/NAME/SYSTEM on defaultHost)
// and whether source is one: a local path, a URL, a forced getter
// ("git::"), a subdirectory ("//") or any other form is not.
func RegistryHost(source, defaultHost string) (string, bool) {
	if strings.Contains(source, "//") || strings.Contains(source, "::") || strings.Contains(source, "?") ||
		strings.HasPrefix(source, ".") || strings.HasPrefix(source, "/") {
		return "", false
	}
	parts := strings.Split(source, "/")
	if len(parts) == 3 {
		parts = append([]string{defaultHost}, parts...)
	}
	if len(parts) != 4 {
		return "", false
	}
	m := Module{Host: strings.ToLower(parts[0]), Namespace: parts[1], Name: parts[2], System: parts[3], Version: "0.0.0"}
	if m.validate() != nil {
		return "", false
	}
	return m.Host, true
}
