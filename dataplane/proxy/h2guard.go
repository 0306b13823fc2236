package proxy

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP/2 rapid reset (CVE-2023-44487). Go's server bounds the handlers a connection runs and
// sends GOAWAY ENHANCE_YOUR_CALM only once resets queue up behind slow handlers; it has no
// per-connection reset rate and no hook on a received RST_STREAM. What it does offer: a
// handler's "Connection: close" makes it send GOAWAY and stop accepting streams (h2_bundle,
// writeChunk → startGracefulShutdown). So the proxy counts, per connection, the streams the client
// cancelled before their answer. Past Options.HTTP2MaxResetsPerSecond (a token bucket with that
// rate and burst), on a connection where at least half of all streams were cancelled (so that a
// busy honest client that cancels some of its many requests is left alone, as Envoy's premature
// reset check does), it answers with Connection: close, then closes the connection a second later
// in case the client keeps streams open past the GOAWAY.

// connGuardKey finds a connection's connGuard in its requests' contexts.
type connGuardKey struct{}

// connGuard is the reset accounting of one client connection.
type connGuard struct {
	c net.Conn
	// streams and resets count the connection's HTTP/2 requests and those the client cancelled.
	streams, resets atomic.Int64
	mu              sync.Mutex
	tokens          float64
	last            time.Time
	tripped         bool
}

// guardConn is the http.Server's ConnContext.
func guardConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connGuardKey{}, &connGuard{c: c})
}

// guardOf returns the connGuard of r's connection, nil for one the http.Server did not accept.
func guardOf(r *http.Request) *connGuard {
	g, _ := r.Context().Value(connGuardKey{}).(*connGuard)
	return g
}

// resetTooFast records a client reset and reports whether the connection is past the limit.
// Only the first report past it returns first=true.
func (g *connGuard) resetTooFast(now time.Time, perSecond int) (over, first bool) {
	resets := g.resets.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tripped {
		return true, false
	}
	rate := float64(perSecond)
	if g.last.IsZero() {
		g.tokens = rate
	} else {
		g.tokens = min(rate, g.tokens+now.Sub(g.last).Seconds()*rate)
	}
	g.last = now
	if g.tokens--; g.tokens >= 0 || 2*resets < g.streams.Load() {
		return false, false
	}
	g.tripped = true
	return true, true
}

// clientReset accounts for an HTTP/2 request the client cancelled before its answer was written.
// Past the limit it sets Connection: close on w (the GOAWAY) and schedules the close.
func (s *Server) clientReset(w http.ResponseWriter, r *http.Request) {
	g := guardOf(r)
	if g == nil {
		return
	}
	over, first := g.resetTooFast(time.Now(), s.opts.HTTP2MaxResetsPerSecond)
	if !over {
		return
	}
	w.Header().Set("Connection", "close")
	if first {
		s.metrics.hits.http2RapidResets.Inc()
		time.AfterFunc(time.Second, func() { g.c.Close() })
	}
}

// isTripped reports whether the connection went past the reset limit.
func (g *connGuard) isTripped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tripped
}
