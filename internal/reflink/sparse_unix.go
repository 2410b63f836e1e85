//go:build linux || darwin || freebsd

package reflink

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// copySparse copies src's data segments into dst at their offsets, as
// SEEK_DATA and SEEK_HOLE find them, and sets dst's size, so every hole of
// src stays a hole of dst. It reports false, having written nothing, when
// the filesystem cannot say where the data is; the caller copies then.
func copySparse(dst, src *os.File) (bool, error) {
	fi, err := src.Stat()
	if err != nil {
		return false, nil
	}
	size := fi.Size()
	fd := int(src.Fd())
	buf := make([]byte, 128<<10)
	for pos := int64(0); pos < size; {
		data, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // a hole up to the end
		}
		if err != nil {
			if pos == 0 {
				return false, nil // no SEEK_DATA here: copy plainly
			}
			return true, fmt.Errorf("seek data in %s: %w", src.Name(), err)
		}
		if data >= size {
			break
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return true, fmt.Errorf("seek hole in %s: %w", src.Name(), err)
		}
		hole = min(hole, size)
		if _, err := io.CopyBuffer(io.NewOffsetWriter(dst, data), io.NewSectionReader(src, data, hole-data), buf); err != nil {
			return true, fmt.Errorf("copy %s to %s: %w", src.Name(), dst.Name(), err)
		}
		pos = hole
	}
	if err := dst.Truncate(size); err != nil {
		return true, fmt.Errorf("size %s: %w", dst.Name(), err)
	}
	if _, err := dst.Seek(0, io.SeekEnd); err != nil {
		return true, fmt.Errorf("seek %s: %w", dst.Name(), err)
	}
	return true, nil
}
