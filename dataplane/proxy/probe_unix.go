//go:build unix

package proxy

import (
	"bufio"
	"net"
	"syscall"
)

// connProbe looks, without blocking and without consuming anything, whether an idle pooled
// connection has been closed by its backend or carries bytes nobody asked for: one recv with
// MSG_PEEK|MSG_DONTWAIT. A read deadline in the past would not do, as the runtime then fails the
// read before trying it. The raw connection and the callback are made once per connection, so a
// probe allocates nothing.
type connProbe struct {
	raw syscall.RawConn
	fn  func(fd uintptr) bool
	buf [1]byte
	ok  bool

	// State of sendThenWait, whose callback (made once, like fn) sends on its first call.
	waitFn  func(fd uintptr) bool
	send    *bufio.Writer
	sent    bool
	sendErr error
}

func (p *connProbe) init(c net.Conn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	p.raw = raw
	p.fn = func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read (EAGAIN) is the one healthy answer: success is EOF or bytes the backend
		// sent unasked (they would be taken for the next answer), any other error a broken one.
		p.ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	}
	p.waitFn = func(uintptr) bool {
		if p.sent {
			return true
		}
		p.sent = true
		p.sendErr = p.send.Flush()
		return p.sendErr != nil
	}
}

// sendThenWait flushes w, the request, and returns once the connection is readable, its read
// deadline has passed or the flush failed (its error is returned; the others are found by the read
// that follows). Reading right after the flush, as a plain Read does, finds nothing yet on nearly
// every request (the backend cannot have answered): one EAGAIN read and a park per request that
// nginx, waiting on epoll first, does not pay. Waiting first is safe only because the flush runs
// inside RawConn.Read's callback, after the runtime reset the descriptor's read readiness: the
// answer, and a close or reset of the connection, can only arrive after the request, so their
// wake-up cannot be lost.
func (p *connProbe) sendThenWait(w *bufio.Writer) error {
	if p.raw == nil {
		return w.Flush()
	}
	p.send, p.sent, p.sendErr = w, false, nil
	_ = p.raw.Read(p.waitFn)
	err := p.sendErr
	p.send, p.sendErr = nil, nil
	return err
}

// idleOK reports whether the idle connection may carry a request.
func (p *connProbe) idleOK() bool {
	if p.raw == nil {
		return true
	}
	if err := p.raw.Read(p.fn); err != nil {
		return false
	}
	return p.ok
}
