//go:build linux

package reflink

import (
	"os"

	"golang.org/x/sys/unix"
)

func clone(dst, src *os.File) error {
	return unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
}
