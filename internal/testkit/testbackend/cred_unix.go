//go:build unix

package testbackend

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// credential is the user the server programs run as when this process is
// root, because postgres refuses to run as root. nil means "as this
// process's user".
type credential struct {
	name     string
	uid, gid uint32
}

// serverUsers are tried in order: nobody exists almost everywhere; the
// postgres user exists where the distribution package is installed.
var serverUsers = []string{"nobody", "postgres"}

func serverCredential() (*credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range serverUsers {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &credential{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root and none of the users %q exists to run postgresql as (postgres refuses to run as root)", serverUsers)
}

// own hands dir (and anything in it) to the server's user.
func (c *credential) own(dir string) error {
	if c == nil {
		return nil
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(c.uid), int(c.gid))
	})
}

func (c *credential) sysProcAttr() *syscall.SysProcAttr {
	if c == nil {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: c.uid, Gid: c.gid, Groups: []uint32{}}}
}
