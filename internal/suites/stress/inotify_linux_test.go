//go:build linux

package stress

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchWritten returns a channel closed once a file named name has been
// written (closed after writing, or renamed into place) in dir from now
// on, and a stop function. A file already there does not count: it may be
// the note of a terraform killed earlier. It waits on inotify rather than
// polling, so the test acts the moment terraform has written the file.
func watchWritten(dir, name string) (written <-chan struct{}, stop func(), err error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	// Non-blocking and wrapped in an *os.File, reads park in the runtime
	// poller and Close wakes them.
	f := os.NewFile(uintptr(fd), "inotify")
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO); err != nil {
		f.Close()
		return nil, nil, err
	}
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return // closed by stop, or inotify failed: nothing more to see
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				off += unix.SizeofInotifyEvent + int(ev.Len)
				if cString(nameBytes) == name {
					close(ch)
					return
				}
			}
		}
	}()
	return ch, func() { f.Close(); <-done }, nil
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
