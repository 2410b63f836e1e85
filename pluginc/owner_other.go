//go:build !unix

package pluginc

import (
	"errors"
	"io/fs"
)

// owner reports no owner: on this platform the cache does not check who
// owns its dirs (Windows ACLs are not modes), as documented on Open.
func owner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

func geteuid() int { return -1 }

func setGroup(string, int) error {
	return errors.New("pluginc: WithSharedGroup is only supported on Unix")
}
