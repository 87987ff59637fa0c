package writer

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pipeSizer resizes the host's stdout pipe (F_SETPIPE_SZ): grown while
// large frames go through it, back to its size when they are over. See
// Writer for when.
type pipeSizer struct {
	rc    interface{ Control(func(uintptr)) error }
	base  int // the pipe's size before it was grown
	grown bool
}

// newPipeSizer returns a sizer for w when it is a pipe whose size can be
// read, else nil. (A terminal, a file, a socket: Node.js gives a child's
// stdio socket pairs, whose buffers are ~200 KiB already.)
func newPipeSizer(w io.Writer) *pipeSizer {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	rc, err := f.SyscallConn() // not f.Fd(), which would make the pipe blocking
	if err != nil {
		return nil
	}
	p := &pipeSizer{rc: rc}
	if p.base = p.fcntl(unix.F_GETPIPE_SZ, 0); p.base <= 0 {
		return nil
	}
	return p
}

// fcntl runs fcntl(fd, op, arg) on the pipe: its result, or -1.
func (p *pipeSizer) fcntl(op, arg int) int {
	r := -1
	_ = p.rc.Control(func(fd uintptr) {
		if n, err := unix.FcntlInt(fd, op, arg); err == nil {
			r = n
		}
	})
	return r
}

// grow makes the pipe bigPipe bytes. It fails (and nothing changes) past
// the user's pipe-buffer quota (fs.pipe-user-pages-soft) or the largest
// size an unprivileged process may set (fs.pipe-max-size, which is
// bigPipe by default).
func (p *pipeSizer) grow() {
	if !p.grown && p.fcntl(unix.F_SETPIPE_SZ, bigPipe) >= bigPipe {
		p.grown = true
	}
}

// shrink gives the pipe its size back; it fails (EBUSY) while the pipe
// holds more than that, and is tried again later.
func (p *pipeSizer) shrink() {
	if p.grown && p.fcntl(unix.F_SETPIPE_SZ, p.base) >= 0 {
		p.grown = false
	}
}
