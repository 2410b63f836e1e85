package tfcmd

import (
	"io"
	"os"
	"syscall"
)

// follow copies to w what the engine writes to the file r reads, as it
// is written: an inotify watch on the file wakes the copy, so nothing
// polls. The returned stop copies what is left and returns once the copy
// is done; call it after the engine has exited. Where inotify cannot be
// had (its per-user limit is reached), everything is copied by stop, after
// the engine's exit.
func follow(r *os.File, w io.Writer) (stop func()) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return func() { _, _ = io.Copy(w, r) }
	}
	if _, err := syscall.InotifyAddWatch(fd, r.Name(), syscall.IN_MODIFY); err != nil {
		_ = syscall.Close(fd)
		return func() { _, _ = io.Copy(w, r) }
	}
	// Non-blocking, so the runtime's poller waits for events, and Close
	// wakes a Read that waits.
	ino := os.NewFile(uintptr(fd), "inotify")
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			if _, err := io.Copy(w, r); err != nil {
				return
			}
			// An event queued since the watch was added wakes this at
			// once: a write between the copy and the read is never missed.
			if _, err := ino.Read(buf); err != nil {
				break // closed by stop
			}
		}
		_, _ = io.Copy(w, r)
	}()
	return func() {
		_ = ino.Close()
		<-done
	}
}
