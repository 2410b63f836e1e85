package reflink

import (
	"fmt"
	"io"
	"os"
)

// Copy fills dst with the content of src, cloning extents when the
// filesystem supports it, and otherwise copying only src's data segments
// (SEEK_DATA and SEEK_HOLE on Linux, macOS and FreeBSD), so a hole in src
// is a hole in dst either way: a sparse file takes no more space in the
// copy than in the source. dst must be empty and open for writing; on
// return its offset is at the end of the data. Copy reports whether the
// data was cloned rather than copied.
func Copy(dst, src *os.File) (cloned bool, err error) {
	if clone(dst, src) == nil {
		if _, err := dst.Seek(0, io.SeekEnd); err != nil {
			return true, fmt.Errorf("seek %s: %w", dst.Name(), err)
		}
		return true, nil
	}
	if done, err := copySparse(dst, src); done {
		return false, err
	}
	// io.Copy between two *os.File uses copy_file_range on Linux, which
	// itself shares extents on filesystems that can.
	if _, err := io.Copy(dst, src); err != nil {
		return false, fmt.Errorf("copy %s to %s: %w", src.Name(), dst.Name(), err)
	}
	return false, nil
}
