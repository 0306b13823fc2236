package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// TestHTTP2RapidReset: a client that opens and cancels streams faster than
// HTTP2MaxResetsPerSecond gets a GOAWAY and its connection closed; a client under the limit
// keeps its connection.
func TestHTTP2RapidReset(t *testing.T) {
	be := newEcho(t, "b", false)
	be.delay = 50 * time.Millisecond // the handler is still at work when the reset comes
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{be.backend(1)}}}})
	reg := limitProxy(t, cfg, Options{HTTP2MaxResetsPerSecond: 20})

	// attack opens n streams of h2c prior knowledge, resetting each at once, every pause, and
	// reports whether a GOAWAY came and whether the connection was closed.
	attack := func(n int, pause time.Duration) (goAway, closed bool) {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(port)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
			t.Fatal(err)
		}
		fr := http2.NewFramer(c, c)
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "h"}, {":path", "/"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					var ne net.Error
					closed = !(errors.As(err, &ne) && ne.Timeout())
					return
				}
				if _, ok := f.(*http2.GoAwayFrame); ok {
					goAway = true
				}
			}
		}()
		for i := range n {
			id := uint32(2*i + 1)
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
				break // closed by the proxy
			}
			if err := fr.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
				break
			}
			time.Sleep(pause)
		}
		if !goAway {
			// Under the limit: nothing should come but answers; stop reading.
			_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		}
		<-done
		return goAway, closed
	}

	if goAway, closed := attack(200, 0); !goAway || !closed {
		t.Errorf("rapid reset: GOAWAY %v, closed %v; want both", goAway, closed)
	}
	if n := limitHit(t, reg, "http2_rapid_reset"); n != 1 {
		t.Errorf("http2_rapid_reset hits = %v, want 1", n)
	}
	if goAway, closed := attack(5, 20*time.Millisecond); goAway || closed {
		t.Errorf("a few resets: GOAWAY %v, closed %v; want neither", goAway, closed)
	}
}
