package tfcmd

import (
	"encoding/binary"
	"io"
	"maps"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// A Follower wakes the copies of engine output files as the engines
// write them: one inotify instance for every file followed through it,
// each file a watch of its own, so nothing polls. Closing an inotify
// instance waits in the kernel for a grace period of its fsnotify marks
// (0.15-15 ms measured on this project's 2-core machine, the machine
// otherwise idle), while a watch is removed at once: an instance per
// terraform process put that wait between each terraform's exit and its
// unit's next step, on a Run's critical path.
//
// The zero value is ready; the instance is made with the first file
// followed. Close ends it; a file followed after Close, or where inotify
// cannot be had (its per-user limit is reached), is copied once its
// engine has exited. A Follower is safe for concurrent use.
type Follower struct {
	mu     sync.Mutex
	ino    *os.File // nil until the first follow, and after Close
	done   chan struct{}
	wakes  map[int]chan struct{} // by watch descriptor
	closed bool
}

// watch adds a watch on the file name and returns the channel its writes
// wake and the function that removes it; ok is false when there is no
// instance to watch it with.
func (f *Follower) watch(name string) (wake <-chan struct{}, remove func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ino == nil && !f.closed {
		f.start()
	}
	if f.ino == nil {
		return nil, nil, false
	}
	rc, err := f.ino.SyscallConn()
	if err != nil {
		return nil, nil, false
	}
	wd := -1
	if cerr := rc.Control(func(fd uintptr) { wd, err = unix.InotifyAddWatch(int(fd), name, unix.IN_MODIFY) }); cerr != nil || err != nil {
		return nil, nil, false
	}
	ch := make(chan struct{}, 1)
	f.wakes[wd] = ch
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.wakes, wd)
		if f.ino != nil {
			_ = rc.Control(func(fd uintptr) { _, _ = unix.InotifyRmWatch(int(fd), uint32(wd)) })
		}
	}, true
}

// start makes the inotify instance and starts its reader; f.mu is held.
func (f *Follower) start() {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return
	}
	// Non-blocking, so the runtime's poller waits for events, and Close
	// wakes a Read that waits.
	f.ino = os.NewFile(uintptr(fd), "inotify")
	f.done = make(chan struct{})
	f.wakes = map[int]chan struct{}{}
	go f.read(f.ino, f.done)
}

// read wakes the copy of each file an event names until the instance is
// closed. A wake is a token in a channel of one: a write between a copy
// and its wait is never missed, and many writes wake the copy once.
func (f *Follower) read(ino *os.File, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 64*unix.SizeofInotifyEvent)
	for {
		n, err := ino.Read(buf)
		if err != nil {
			return // closed by Close
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int(int32(binary.NativeEndian.Uint32(buf[off:])))
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			off += unix.SizeofInotifyEvent + nameLen
			f.mu.Lock()
			var wakes []chan struct{}
			if wd == -1 { // the queue overflowed (IN_Q_OVERFLOW): events were lost
				wakes = slices.Collect(maps.Values(f.wakes))
			} else if ch := f.wakes[wd]; ch != nil {
				wakes = []chan struct{}{ch}
			}
			f.mu.Unlock()
			for _, ch := range wakes {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}
}

// Close ends the inotify instance and waits for its reader.
func (f *Follower) Close() {
	f.mu.Lock()
	ino, done := f.ino, f.done
	f.ino, f.closed = nil, true
	f.mu.Unlock()
	if ino != nil {
		_ = ino.Close()
		<-done
	}
}

// follow copies to w what the engine writes to the file r reads, as it
// is written, woken by fl (nil: an instance of its own, closed by stop).
// The returned stop copies what is left and returns once the copy is
// done; call it after the engine has exited. Where no watch can be had,
// everything is copied by stop, after the engine's exit.
func follow(r *os.File, w io.Writer, fl *Follower) (stop func()) {
	own := fl == nil
	if own {
		fl = &Follower{}
	}
	wake, remove, ok := fl.watch(r.Name())
	if !ok {
		if own {
			fl.Close()
		}
		return func() { _, _ = io.Copy(w, r) }
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := io.Copy(w, r); err != nil {
				return
			}
			select {
			case <-wake:
			case <-quit:
				_, _ = io.Copy(w, r)
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		remove()
		if own {
			fl.Close()
		}
	}
}
