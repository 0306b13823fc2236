//go:build unix

package proxy

import (
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
