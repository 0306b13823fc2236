//go:build !unix

package proxy

import (
	"bufio"
	"net"
)

// connProbe cannot peek at a socket here: idle connections are trusted until used, and a failure
// before any answer is retried (exchangeFast).
type connProbe struct{}

func (p *connProbe) init(net.Conn) {}

func (p *connProbe) idleOK() bool { return true }

func (p *connProbe) sendThenWait(w *bufio.Writer) error { return w.Flush() }
