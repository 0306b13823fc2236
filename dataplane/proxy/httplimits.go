package proxy

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Deadlines of the net/http path (limits.go), set through http.ResponseController so that they
// apply to the HTTP/1.1 connection or to the HTTP/2 stream alike.

// idleBody is a request body under requestBodyIdleTimeout: every read may wait for the client at
// most d. The Transport reads it from its own goroutine, possibly after the handler returned, so
// it holds its own controller of the request's ResponseWriter and stops touching deadlines once
// finish says the handler is done.
type idleBody struct {
	io.ReadCloser
	rc  http.ResponseController
	d   time.Duration // 0: no idle bound (an HTTP/2 stream of unknown length)
	hit prometheus.Counter
	// state is bodyOK, bodyIdled or bodyExpired.
	state atomic.Int32
	mu    sync.Mutex // orders deadline changes against finish and expire
	dl    time.Time
	done  bool // the handler returned
	eof   bool // the whole body was read
}

const (
	bodyOK int32 = iota
	bodyIdled
	bodyExpired
)

// watchBody puts r's body, if any, under lim's idle timeout; it returns the request to serve
// (a copy: the http.Server's own request keeps its body, whose type it inspects when answering).
func watchBody(r *http.Request, lim *limits, rc http.ResponseController, hit prometheus.Counter) (*http.Request, *idleBody) {
	// An HTTP/2 request that ended with its headers has a Body (the server's) but a length of 0;
	// nothing can arrive on it, so it needs no watch (nor the copy of the request).
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r, nil
	}
	d := lim.requestBodyIdleTimeout
	if r.ProtoMajor > 1 && r.ContentLength < 0 {
		// A stream without a length (gRPC, bidirectional streaming) may idle legitimately; it
		// holds one stream, not a connection, and HTTP/2 flow control bounds it.
		d = 0
	}
	b := &idleBody{ReadCloser: r.Body, rc: rc, d: d, hit: hit}
	out := new(http.Request)
	*out = *r
	out.Body = b
	return out, b
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.d > 0 {
		b.mu.Lock()
		if !b.done && b.state.Load() == bodyOK {
			if dl, ok := refresh(&b.dl, time.Now(), b.d); ok {
				_ = b.rc.SetReadDeadline(dl)
			}
		}
		b.mu.Unlock()
	}
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		if b.state.CompareAndSwap(bodyOK, bodyIdled) {
			b.hit.Inc()
		}
	case err == io.EOF:
		// Done: the connection's next wait (net/http's background read) must not inherit it.
		b.mu.Lock()
		b.eof = true
		if !b.done && !b.dl.IsZero() {
			b.dl = time.Time{}
			_ = b.rc.SetReadDeadline(time.Time{})
		}
		b.mu.Unlock()
	}
	return n, err
}

// expire ends a read blocked on the client now: the request timeout fired. A body read whole
// is left alone, and its connection kept.
func (b *idleBody) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done && !b.eof && b.state.CompareAndSwap(bodyOK, bodyExpired) {
		_ = b.rc.SetReadDeadline(time.Now())
	}
}

// finish is called when the handler returns.
func (b *idleBody) finish() {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
}

func (b *idleBody) idled() bool   { return b.state.Load() == bodyIdled }
func (b *idleBody) expired() bool { return b.state.Load() == bodyExpired }
