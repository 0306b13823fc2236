// Command epollceiling measures how fast a Go process can relay plain HTTP/1.1 keep-alive requests
// on one core when it waits for readiness the way nginx does (one epoll loop, no read before the
// wait), instead of through the runtime's netpoller as the proxy does. It is a ceiling for issue
// 22's HTTP/1.1 rows, not a proxy: no routing, no header checks, GET requests without a body, one
// backend connection pinned to each client connection, answers with a Content-Length. Anything
// else closes the connection.
//
// It takes the proxy's flags that tests/bench/dataplane/ab-http.sh passes, so it can be one side
// of that A/B:
//
//	B=$(go build -o /tmp/ceil ./tests/bench/dataplane/epollceiling && echo /tmp/ceil) A=<proxy> bash tests/bench/dataplane/ab-http.sh
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

func main() {
	flag.String("config", "", "ignored (the proxy's flag)")
	flag.String("denied-endpoint-cidrs", "", "ignored (the proxy's flag)")
	address := flag.String("address", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 18181, "port to listen on")
	backend := flag.String("backend", "127.0.0.1:18180", "backend address")
	probe := flag.Bool("probe", true, "check the backend connection with a MSG_PEEK read before each request, as the proxy does")
	flag.Parse()
	runtime.LockOSThread()
	be, err := net.ResolveTCPAddr("tcp4", *backend)
	if err != nil {
		log.Fatal(err)
	}
	l, err := listen(*address, *port)
	if err != nil {
		log.Fatal(err)
	}
	lp := &loop{listener: l, backend: be, probe: *probe, conns: map[int]*pair{}}
	if err := lp.run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func listen(address string, port int) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return -1, err
	}
	sa := &syscall.SockaddrInet4{Port: port}
	copy(sa.Addr[:], net.ParseIP(address).To4())
	if err := syscall.Bind(fd, sa); err != nil {
		return -1, err
	}
	return fd, syscall.Listen(fd, 4096)
}

// pair is a client connection and its backend connection; in is the client's bytes not yet
// relayed, out the backend's.
type pair struct {
	client, backend int
	in, out         []byte
	want            int // bytes of the backend's answer, once its head is read; 0 before
	waiting         bool
}

type loop struct {
	listener int
	backend  *net.TCPAddr
	probe    bool
	epfd     int
	conns    map[int]*pair // by either descriptor
}

func (lp *loop) run() error {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	lp.epfd = epfd
	if err := lp.watch(lp.listener); err != nil {
		return err
	}
	events := make([]syscall.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	for {
		// A ready event is usually waiting: ask without the runtime's system call hooks first,
		// and block (through them) only when nothing is.
		n, err := rawEpollWait(epfd, events)
		if err == nil && n == 0 {
			n, err = syscall.EpollWait(epfd, events, -1)
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			if fd == lp.listener {
				lp.accept()
				continue
			}
			p := lp.conns[fd]
			if p == nil {
				continue
			}
			if fd == p.client {
				lp.fromClient(p, buf)
			} else {
				lp.fromBackend(p, buf)
			}
		}
	}
}

func (lp *loop) watch(fd int) error {
	return syscall.EpollCtl(lp.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)})
}

func (lp *loop) accept() {
	for {
		c, _, err := syscall.Accept4(lp.listener, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err != nil {
			return
		}
		b, err := lp.dial()
		if err != nil {
			syscall.Close(c)
			continue
		}
		p := &pair{client: c, backend: b}
		lp.conns[c], lp.conns[b] = p, p
		_ = syscall.SetsockoptInt(c, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		if lp.watch(c) != nil || lp.watch(b) != nil {
			lp.close(p)
		}
	}
}

// dial connects to the backend before making the descriptor non-blocking: a ceiling does not
// need a non-blocking connect.
func (lp *loop) dial() (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	sa := &syscall.SockaddrInet4{Port: lp.backend.Port}
	copy(sa.Addr[:], lp.backend.IP.To4())
	if err := syscall.Connect(fd, sa); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	return fd, syscall.SetNonblock(fd, true)
}

func (lp *loop) close(p *pair) {
	delete(lp.conns, p.client)
	delete(lp.conns, p.backend)
	syscall.Close(p.client)
	syscall.Close(p.backend)
}

func (lp *loop) fromClient(p *pair, buf []byte) {
	n, err := rawRead(p.client, buf)
	if err == syscall.EAGAIN {
		return
	}
	if n <= 0 || err != nil {
		lp.close(p)
		return
	}
	p.in = append(p.in, buf[:n]...)
	lp.next(p)
}

// next sends the client's next complete request head to the backend, when none is in flight.
func (lp *loop) next(p *pair) {
	if p.waiting {
		return
	}
	end := bytes.Index(p.in, []byte("\r\n\r\n"))
	if end < 0 {
		return
	}
	if lp.probe {
		var one [1]byte
		if _, err := rawPeek(p.backend, one[:]); err != syscall.EAGAIN {
			lp.close(p)
			return
		}
	}
	req := p.in[:end+4]
	if n, err := rawWrite(p.backend, req); err != nil || n != len(req) {
		lp.close(p)
		return
	}
	p.in = p.in[:copy(p.in, p.in[end+4:])]
	p.waiting = true
}

func (lp *loop) fromBackend(p *pair, buf []byte) {
	n, err := rawRead(p.backend, buf)
	if err == syscall.EAGAIN {
		return
	}
	if n <= 0 || err != nil || !p.waiting {
		lp.close(p)
		return
	}
	p.out = append(p.out, buf[:n]...)
	if p.want == 0 {
		end := bytes.Index(p.out, []byte("\r\n\r\n"))
		if end < 0 {
			return
		}
		length, ok := contentLength(p.out[:end])
		if !ok {
			lp.close(p)
			return
		}
		p.want = end + 4 + length
	}
	if len(p.out) < p.want {
		return
	}
	if len(p.out) > p.want {
		lp.close(p) // more than the answer: the proxy's framing check
		return
	}
	if n, err := rawWrite(p.client, p.out); err != nil || n != len(p.out) {
		lp.close(p)
		return
	}
	p.out, p.want, p.waiting = p.out[:0], 0, false
	lp.next(p) // a pipelined request already read
}

func contentLength(head []byte) (int, bool) {
	for line := range bytes.SplitSeq(head, []byte("\r\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(name, []byte("Content-Length")) {
			n, err := strconv.Atoi(string(bytes.TrimSpace(value)))
			return n, err == nil && n >= 0
		}
	}
	return 0, false
}

// The descriptors are non-blocking, so their reads and writes never block: they skip the runtime's
// system call hooks (entersyscall/exitsyscall), as the ceiling of what Go can do.

func rawRead(fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return errno(n, e)
}

func rawWrite(fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return errno(n, e)
}

func rawPeek(fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return errno(n, e)
}

func rawEpollWait(epfd int, events []syscall.EpollEvent) (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	return errno(n, e)
}

func errno(n uintptr, e syscall.Errno) (int, error) {
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}
