package proxy

import (
	"bytes"
	"crypto/tls"
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
// HTTP2MaxResetsPerSecond gets a GOAWAY and its connection closed; a client under the limit, or
// one that cancels as fast but only a minority of its streams, keeps its connection.
func TestHTTP2RapidReset(t *testing.T) {
	t.Run("h2c", func(t *testing.T) { testRapidReset(t, false) })
	t.Run("h2", func(t *testing.T) { testRapidReset(t, true) })
}

func testRapidReset(t *testing.T, useTLS bool) {
	be := newEcho(t, "b", false)
	be.delay = 50 * time.Millisecond // the handler is still at work when the reset comes
	vh := ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{be.backend(1)}}}}
	cfg, port := httpConfig(t, vh)
	if useTLS {
		cert, _ := selfSigned(t, "a", "a.example")
		cfg.Listeners[0].Protocol, cfg.Listeners[0].Certificates = ir.ProtocolHTTPS, []ir.Certificate{cert}
	}
	reg := limitProxy(t, cfg, Options{HTTP2MaxResetsPerSecond: 20})
	dial := func() net.Conn {
		addr := "127.0.0.1:" + strconv.Itoa(int(port))
		if useTLS {
			c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "a.example", InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // test
			if err != nil {
				t.Fatal(err)
			}
			if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
				t.Fatalf("ALPN %q", p)
			}
			return c
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// attack opens complete streams and waits for their answers, then n streams, resetting each
	// at once, every pause, and reports whether a GOAWAY came and whether the connection was
	// closed within wait.
	attack := func(complete, n int, pause, wait time.Duration) (goAway, closed bool) {
		c := dial()
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
		done, answered := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			_ = c.SetReadDeadline(time.Now().Add(wait))
			ended := 0
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					var ne net.Error
					closed = !errors.As(err, &ne) || !ne.Timeout()
					return
				}
				if _, ok := f.(*http2.GoAwayFrame); ok {
					goAway = true
				}
				if h := f.Header(); (h.Type == http2.FrameHeaders || h.Type == http2.FrameData) && h.Flags.Has(http2.FlagDataEndStream) {
					if ended++; ended == complete {
						close(answered)
					}
				}
			}
		}()
		for i := range complete {
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
				t.Fatal(err)
			}
		}
		if complete > 0 {
			select {
			case <-answered:
			case <-done:
				t.Fatal("connection ended before the answers")
			}
		}
		for i := range n {
			id := uint32(2*(complete+i) + 1)
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
				break // closed by the proxy
			}
			if err := fr.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
				break
			}
			time.Sleep(pause)
		}
		<-done
		return goAway, closed
	}

	if goAway, closed := attack(0, 200, 0, 5*time.Second); !goAway || !closed {
		t.Errorf("rapid reset: GOAWAY %v, closed %v; want both", goAway, closed)
	}
	if n := limitHit(t, reg, "http2_rapid_reset"); n != 1 {
		t.Errorf("http2_rapid_reset hits = %v, want 1", n)
	}
	if goAway, closed := attack(0, 5, 20*time.Millisecond, 1500*time.Millisecond); goAway || closed {
		t.Errorf("a few resets: GOAWAY %v, closed %v; want neither", goAway, closed)
	}
	if goAway, closed := attack(100, 40, 0, 1500*time.Millisecond); goAway || closed {
		t.Errorf("40 rapid resets after 100 answered streams: GOAWAY %v, closed %v; want neither", goAway, closed)
	}
}
