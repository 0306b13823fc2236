package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// h2Client speaks HTTP/2 frame by frame to the proxy.
type h2Client struct {
	t   testing.TB
	c   net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	hb  bytes.Buffer
}

// dialH2 connects with prior knowledge (h2c) and sends the preface and, with settings, an empty
// SETTINGS frame.
func dialH2(t testing.TB, addr string, settings bool) *h2Client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl := &h2Client{t: t, c: c, fr: http2.NewFramer(c, c)}
	cl.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	cl.fr.SetMaxReadFrameSize(1 << 24)
	cl.enc = hpack.NewEncoder(&cl.hb)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if settings {
		if err := cl.fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// block HPACK-encodes name/value pairs.
func (cl *h2Client) block(fields ...string) []byte {
	cl.hb.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		_ = cl.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return bytes.Clone(cl.hb.Bytes())
}

// get is the header list of a plain GET.
func get2(path string, extra ...string) []string {
	return append([]string{":method", "GET", ":scheme", "http", ":authority", "h", ":path", path}, extra...)
}

func (cl *h2Client) headers(id uint32, end bool, fields ...string) {
	// Write errors are the proxy closing the connection, which the reads then report.
	_ = cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: cl.block(fields...), EndStream: end, EndHeaders: true})
}

// describe names a frame, or a read error, as the tests compare them.
func describe(f http2.Frame, err error) string {
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return "timeout"
		}
		return "closed"
	}
	switch f := f.(type) {
	case *http2.RSTStreamFrame:
		return fmt.Sprintf("RST_STREAM %d %v", f.StreamID, f.ErrCode)
	case *http2.GoAwayFrame:
		return "GOAWAY " + f.ErrCode.String()
	case *http2.MetaHeadersFrame:
		return fmt.Sprintf("HEADERS %d %s", f.StreamID, f.PseudoValue("status"))
	case *http2.PingFrame:
		return fmt.Sprintf("PING ack=%v %x", f.IsAck(), f.Data)
	case *http2.SettingsFrame:
		if f.IsAck() {
			return "SETTINGS ack"
		}
		return "SETTINGS"
	case *http2.DataFrame:
		return fmt.Sprintf("DATA %d end=%v", f.StreamID, f.StreamEnded())
	case *http2.WindowUpdateFrame:
		return "WINDOW_UPDATE"
	}
	return f.Header().Type.String()
}

// await reads frames until one whose description starts with one of kinds, a GOAWAY, or the end
// of the connection, and returns its description.
func (cl *h2Client) await(kinds ...string) string {
	cl.t.Helper()
	_ = cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		d := describe(cl.fr.ReadFrame())
		if strings.HasPrefix(d, "GOAWAY") || d == "closed" || d == "timeout" {
			return d
		}
		for _, k := range kinds {
			if strings.HasPrefix(d, k) {
				return d
			}
		}
	}
}

// awaitEnd reads frames until stream id ends and returns its status.
func (cl *h2Client) awaitEnd(id uint32) string {
	cl.t.Helper()
	_ = cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	status := ""
	for {
		f, err := cl.fr.ReadFrame()
		if err != nil {
			cl.t.Fatalf("stream %d: %s", id, describe(f, err))
		}
		if f.Header().StreamID != id {
			continue
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if s := f.PseudoValue("status"); s != "" {
				status = s
			}
		case *http2.RSTStreamFrame:
			return describe(f, nil)
		}
		if f.Header().Flags.Has(http2.FlagDataEndStream) {
			return status
		}
	}
}

// h2Backend answers "ok", and on /hold waits until released (or the request is cancelled),
// telling held when it has the request.
type h2Backend struct {
	held    chan struct{}
	release chan struct{}
	// cancelled gets a value for each /hold request whose client went away.
	cancelled chan struct{}
	once      sync.Once
}

func newH2Backend(t *testing.T) (*h2Backend, net.Addr) {
	b := &h2Backend{held: make(chan struct{}, 1024), release: make(chan struct{}), cancelled: make(chan struct{}, 1024)}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { b.free(); srv.Close() })
	return b, ln.Addr()
}

func (b *h2Backend) free() { b.once.Do(func() { close(b.release) }) }

func (b *h2Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, "/full") {
	case "/hold":
		b.held <- struct{}{}
		select {
		case <-b.release:
		case <-r.Context().Done():
			b.cancelled <- struct{}{}
			return
		}
	case "/sum":
		// The request body's length and digest.
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		_, _ = fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
		return
	case "/big":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		_, _ = w.Write(bytes.Repeat([]byte("x"), n))
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = io.WriteString(w, "ok")
}

// h2Proxy2 serves a route to the backend on an HTTP listener, with the proxy's own HTTP/2 server.
func h2Proxy2(t *testing.T, be net.Addr, opts Options) (*Server, string, uint32) {
	t.Helper()
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{irBackend("b", 1, be)}}}})
	s := newProxyOpts(t, cfg, opts)
	return s, "127.0.0.1:" + strconv.Itoa(int(port)), port
}

// TestH2ServerProtocol: the proxy's HTTP/2 server answers protocol violations with the stream or
// connection error RFC 9113 asks for, and the control frames with theirs.
func TestH2ServerProtocol(t *testing.T) {
	_, addr := newH2Backend(t)
	_, proxyAddr, _ := h2Proxy2(t, addr, Options{MaxHeaderBytes: 4096})
	tests := []struct {
		name     string
		settings bool // send the client's SETTINGS first
		send     func(cl *h2Client)
		want     string
	}{{
		name: "settings acknowledged", settings: true,
		send: func(*h2Client) {},
		want: "SETTINGS ack",
	}, {
		name: "ping answered", settings: true,
		send: func(cl *h2Client) { _ = cl.fr.WritePing(false, [8]byte{1, 2, 3, 4, 5, 6, 7, 8}) },
		want: "PING ack=true 0102030405060708",
	}, {
		name: "first frame not SETTINGS",
		send: func(cl *h2Client) { _ = cl.fr.WritePing(false, [8]byte{}) },
		want: "GOAWAY PROTOCOL_ERROR",
	}, {
		name: "a request", settings: true,
		send: func(cl *h2Client) { cl.headers(1, true, get2("/")...) },
		want: "HEADERS 1 200",
	}, {
		name: "DATA on a closed stream", settings: true,
		send: func(cl *h2Client) {
			cl.headers(1, true, get2("/")...)
			if got := cl.awaitEnd(1); got != "200" {
				cl.t.Errorf("stream 1: %s", got)
			}
			_ = cl.fr.WriteData(1, true, []byte("late"))
		},
		want: "RST_STREAM 1 STREAM_CLOSED",
	}, {
		name: "DATA on an idle stream", settings: true,
		send: func(cl *h2Client) { _ = cl.fr.WriteData(3, true, []byte("x")) },
		want: "GOAWAY PROTOCOL_ERROR",
	}, {
		name: "HEADERS on an even stream", settings: true,
		send: func(cl *h2Client) { cl.headers(2, true, get2("/")...) },
		want: "GOAWAY PROTOCOL_ERROR",
	}, {
		name: "stream id going down", settings: true,
		send: func(cl *h2Client) {
			cl.headers(5, true, get2("/")...)
			cl.awaitEnd(5)
			cl.headers(3, true, get2("/")...)
		},
		want: "GOAWAY PROTOCOL_ERROR",
	}, {
		name: "RST_STREAM on an idle stream", settings: true,
		send: func(cl *h2Client) { _ = cl.fr.WriteRSTStream(7, http2.ErrCodeCancel) },
		want: "GOAWAY PROTOCOL_ERROR",
	}, {
		name: "PUSH_PROMISE from the client", settings: true,
		send: func(cl *h2Client) {
			cl.headers(1, false, ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/hold")
			_ = cl.fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, BlockFragment: cl.block(get2("/")...), EndHeaders: true})
		},
		want: "GOAWAY PROTOCOL_ERROR",
	}, {
		name: "connection window overflow", settings: true,
		send: func(cl *h2Client) { _ = cl.fr.WriteWindowUpdate(0, 1<<31-1) },
		want: "GOAWAY FLOW_CONTROL_ERROR",
	}, {
		name: "stream window overflow", settings: true,
		send: func(cl *h2Client) {
			cl.headers(1, false, ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/hold")
			_ = cl.fr.WriteWindowUpdate(1, 1<<31-1)
		},
		want: "RST_STREAM 1 FLOW_CONTROL_ERROR",
	}, {
		name: "initial window size too large",
		send: func(cl *h2Client) {
			_ = cl.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31})
		},
		want: "GOAWAY FLOW_CONTROL_ERROR",
	}, {
		name: "frame larger than SETTINGS_MAX_FRAME_SIZE", settings: true,
		send: func(cl *h2Client) {
			cl.headers(1, false, ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/hold")
			// A frame header announcing 2 MiB of DATA.
			_, _ = cl.c.Write([]byte{0x20, 0, 0, byte(http2.FrameData), 0, 0, 0, 0, 1})
		},
		want: "GOAWAY FRAME_SIZE_ERROR",
	}, {
		name: "CONTINUATION flood", settings: true,
		send: func(cl *h2Client) {
			_ = cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: cl.block(get2("/")...)})
			pad := cl.block("x-pad", strings.Repeat("a", 1000))
			for range 1000 {
				if cl.fr.WriteContinuation(1, false, pad) != nil {
					return // closed by the proxy
				}
			}
		},
		want: "GOAWAY PROTOCOL_ERROR",
	}, {
		name: "header list too large", settings: true,
		send: func(cl *h2Client) {
			big := strings.Repeat("a", 1000)
			cl.headers(1, true, get2("/", "x-1", big, "x-2", big, "x-3", big, "x-4", big, "x-5", big)...)
		},
		want: "HEADERS 1 431",
	}, {
		name: "one field larger than the header list", settings: true,
		send: func(cl *h2Client) { cl.headers(1, true, get2("/", "x-big", strings.Repeat("a", 5000))...) },
		want: "GOAWAY COMPRESSION_ERROR",
	}, {
		name: "body shorter than content-length", settings: true,
		send: func(cl *h2Client) {
			cl.headers(1, false, ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/", "content-length", "5")
			_ = cl.fr.WriteData(1, true, []byte("abc"))
		},
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "body longer than content-length", settings: true,
		send: func(cl *h2Client) {
			cl.headers(1, false, ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/hold", "content-length", "2")
			_ = cl.fr.WriteData(1, false, []byte("abc"))
		},
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "content-length with END_STREAM on HEADERS", settings: true,
		send: func(cl *h2Client) {
			cl.headers(1, true, ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/", "content-length", "3")
		},
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "two content-lengths", settings: true,
		send: func(cl *h2Client) {
			cl.headers(1, false, ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/", "content-length", "3", "content-length", "4")
		},
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "transfer-encoding", settings: true,
		send: func(cl *h2Client) { cl.headers(1, true, get2("/", "transfer-encoding", "chunked")...) },
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "connection header", settings: true,
		send: func(cl *h2Client) { cl.headers(1, true, get2("/", "connection", "keep-alive")...) },
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "TE other than trailers", settings: true,
		send: func(cl *h2Client) { cl.headers(1, true, get2("/", "te", "gzip")...) },
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "upper-case field name", settings: true,
		send: func(cl *h2Client) { cl.headers(1, true, get2("/", "X-Upper", "1")...) },
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "pseudo-header after a regular one", settings: true,
		send: func(cl *h2Client) {
			cl.headers(1, true, ":method", "GET", ":scheme", "http", "x-a", "1", ":path", "/", ":authority", "h")
		},
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "missing :path", settings: true,
		send: func(cl *h2Client) { cl.headers(1, true, ":method", "GET", ":scheme", "http", ":authority", "h") },
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "response pseudo-header in a request", settings: true,
		send: func(cl *h2Client) { cl.headers(1, true, get2("/", ":status", "200")...) },
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "host differs from :authority", settings: true,
		send: func(cl *h2Client) { cl.headers(1, true, get2("/", "host", "other")...) },
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "trailers without END_STREAM", settings: true,
		send: func(cl *h2Client) {
			cl.headers(1, false, ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/hold")
			cl.headers(1, false, "x-trailer", "1")
		},
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}, {
		name: "stream depending on itself", settings: true,
		send: func(cl *h2Client) { _ = cl.fr.WritePriority(1, http2.PriorityParam{StreamDep: 1}) },
		want: "RST_STREAM 1 PROTOCOL_ERROR",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := dialH2(t, proxyAddr, tt.settings)
			tt.send(cl)
			kind, _, _ := strings.Cut(tt.want, " ")
			if strings.HasPrefix(tt.want, "SETTINGS") {
				kind = tt.want // the server's own SETTINGS come first
			}
			if diff := cmp.Diff(tt.want, cl.await(kind)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestH2ServerBadPreface: a connection that starts like h2c but sends no valid preface is closed
// without an answer.
func TestH2ServerBadPreface(t *testing.T) {
	_, addr := newH2Backend(t)
	_, proxyAddr, _ := h2Proxy2(t, addr, Options{})
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || len(got) != 0 {
		t.Errorf("bad preface: read %q, %v; want the connection closed without a byte", got, err)
	}
}

// TestH2ServerMaxConcurrentStreams: a stream past SETTINGS_MAX_CONCURRENT_STREAMS is refused; the
// others are served.
func TestH2ServerMaxConcurrentStreams(t *testing.T) {
	be, addr := newH2Backend(t)
	_, proxyAddr, _ := h2Proxy2(t, addr, Options{})
	cl := dialH2(t, proxyAddr, true)
	for i := range h2MaxStreams {
		cl.headers(uint32(2*i+1), true, get2("/hold")...)
	}
	for range h2MaxStreams {
		<-be.held
	}
	over := uint32(2*h2MaxStreams + 1)
	cl.headers(over, true, get2("/")...)
	if got, want := cl.await("RST_STREAM"), fmt.Sprintf("RST_STREAM %d REFUSED_STREAM", over); got != want {
		t.Errorf("stream over the limit: %s, want %s", got, want)
	}
	be.free()
	if got := cl.awaitEnd(1); got != "200" {
		t.Errorf("stream 1 after release: %s", got)
	}
}

// TestH2ServerResetCutsUpstream: a stream the client resets while its backend works lets go of
// the upstream request, on the fast path as on the full one.
func TestH2ServerResetCutsUpstream(t *testing.T) {
	be, addr := newH2Backend(t)
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
		{Name: "fast", Match: ir.Match{Path: prefix("/hold")}, Backends: []ir.Backend{irBackend("b", 1, addr)}},
		{Name: "full", Match: ir.Match{Path: prefix("/full")}, Backends: []ir.Backend{irBackend("b", 1, addr)}, Timeouts: ir.Timeouts{Request: time.Minute}},
	}})
	newProxyOpts(t, cfg, Options{})
	cl := dialH2(t, "127.0.0.1:"+strconv.Itoa(int(port)), true)
	for i, path := range []string{"/hold", "/full/hold"} {
		id := uint32(2*i + 1)
		cl.headers(id, true, get2(path)...)
		<-be.held
		_ = cl.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		select {
		case <-be.cancelled:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the backend still has the request 10s after the client reset it", path)
		}
	}
}

// TestH2ServerRapidResetCalm: past the reset limit the GOAWAY says ENHANCE_YOUR_CALM.
func TestH2ServerRapidResetCalm(t *testing.T) {
	_, addr := newH2Backend(t)
	_, proxyAddr, _ := h2Proxy2(t, addr, Options{HTTP2MaxResetsPerSecond: 5})
	cl := dialH2(t, proxyAddr, true)
	for i := range 50 {
		id := uint32(2*i + 1)
		cl.headers(id, true, get2("/hold")...)
		_ = cl.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	if got := cl.await("none"); got != "GOAWAY ENHANCE_YOUR_CALM" {
		t.Errorf("rapid reset: %s, want GOAWAY ENHANCE_YOUR_CALM", got)
	}
}

// TestH2ServerStreamsIndependent: over one connection, many streams are answered while one waits
// for a slow backend; it is answered once the backend is.
func TestH2ServerStreamsIndependent(t *testing.T) {
	be, addr := newH2Backend(t)
	_, proxyAddr, _ := h2Proxy2(t, addr, Options{})
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	base := "http://" + proxyAddr
	slow := make(chan error, 1)
	go func() {
		res, err := c.Get(base + "/hold")
		if err == nil {
			_, err = io.ReadAll(res.Body)
			res.Body.Close()
			if err == nil && res.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", res.StatusCode)
			}
		}
		slow <- err
	}()
	<-be.held
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Go(func() {
			res, err := c.Get(base + "/fast")
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.ProtoMajor != 2 || string(b) != "ok" {
				errs <- fmt.Errorf("HTTP/%d %q", res.ProtoMajor, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case err := <-slow:
		t.Fatalf("slow stream ended before its backend answered: %v", err)
	default:
	}
	be.free()
	if err := <-slow; err != nil {
		t.Errorf("slow stream: %v", err)
	}
}

// TestH2ServerLargeBodies: request and response bodies several times the flow-control windows
// pass whole, over h2 and h2c.
func TestH2ServerLargeBodies(t *testing.T) {
	_, addr := newH2Backend(t)
	const size = 5 << 20
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "h2c", true: "h2"}[useTLS], func(t *testing.T) {
			cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{irBackend("b", 1, addr)}}}})
			p := new(http.Protocols)
			tr := &http.Transport{Protocols: p}
			scheme := "http"
			if useTLS {
				cert, _ := selfSigned(t, "a", "a.example")
				cfg.Listeners[0].Protocol, cfg.Listeners[0].Certificates = ir.ProtocolHTTPS, []ir.Certificate{cert}
				p.SetHTTP2(true)
				tr.TLSClientConfig = &tls.Config{ServerName: "a.example", InsecureSkipVerify: true} //nolint:gosec // test
				scheme = "https"
			} else {
				p.SetUnencryptedHTTP2(true)
			}
			newProxyOpts(t, cfg, Options{})
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
			base := scheme + "://127.0.0.1:" + strconv.Itoa(int(port))

			body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
			res, err := c.Post(base+"/sum", "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(res.Body)
			res.Body.Close()
			sum := sha256.Sum256(body)
			if want := fmt.Sprintf("%d %s", size, hex.EncodeToString(sum[:])); res.ProtoMajor != 2 || string(got) != want {
				t.Errorf("upload: HTTP/%d %q, want %q", res.ProtoMajor, got, want)
			}

			res, err = c.Get(base + "/big?n=" + strconv.Itoa(size))
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err != nil || n != size {
				t.Errorf("download: %d bytes, %v; want %d", n, err, size)
			}
		})
	}
}

// TestH2ServerDrain: when its listener goes, a connection gets a GOAWAY, the stream in flight is
// still answered, and the connection is then closed.
func TestH2ServerDrain(t *testing.T) {
	be, addr := newH2Backend(t)
	s, proxyAddr, _ := h2Proxy2(t, addr, Options{})
	cl := dialH2(t, proxyAddr, true)
	cl.headers(1, true, get2("/hold")...)
	<-be.held
	if err := s.Apply(&ir.Config{Gateway: "ns/gw", Version: 2}); err != nil {
		t.Fatal(err)
	}
	if got := cl.await("GOAWAY"); got != "GOAWAY NO_ERROR" {
		t.Fatalf("on drain: %s, want GOAWAY NO_ERROR", got)
	}
	be.free()
	if got := cl.awaitEnd(1); got != "200" {
		t.Errorf("stream in flight: %s, want 200", got)
	}
	if got := cl.await("none"); got != "closed" {
		t.Errorf("after the last stream: %s, want closed", got)
	}
}

// TestH2ServerIdleTimeout: a connection without streams for IdleTimeout gets a GOAWAY and is closed.
func TestH2ServerIdleTimeout(t *testing.T) {
	_, addr := newH2Backend(t)
	_, proxyAddr, _ := h2Proxy2(t, addr, Options{IdleTimeout: 200 * time.Millisecond})
	cl := dialH2(t, proxyAddr, true)
	cl.headers(1, true, get2("/")...)
	if got := cl.awaitEnd(1); got != "200" {
		t.Fatalf("stream 1: %s", got)
	}
	if got := cl.await("none"); got != "GOAWAY NO_ERROR" {
		t.Errorf("idle connection: %s, want GOAWAY NO_ERROR", got)
	}
	if got := cl.await("none"); got != "closed" {
		t.Errorf("after GOAWAY: %s, want closed", got)
	}
}

// TestH2ServerDisabled: DisableHTTP2Server hands h2c to net/http's server, which answers a
// connection-specific request header with 400 where the proxy's own server resets the stream.
func TestH2ServerDisabled(t *testing.T) {
	_, addr := newH2Backend(t)
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{}, "RST_STREAM 1 PROTOCOL_ERROR"},
		{Options{DisableHTTP2Server: true}, "HEADERS 1 400"},
	} {
		_, proxyAddr, _ := h2Proxy2(t, addr, tt.opts)
		cl := dialH2(t, proxyAddr, true)
		cl.headers(1, true, get2("/", "connection", "keep-alive")...)
		if got := cl.await("RST_STREAM 1", "HEADERS 1"); got != tt.want {
			t.Errorf("DisableHTTP2Server=%v: %s, want %s", tt.opts.DisableHTTP2Server, got, tt.want)
		}
	}
}

// FuzzH2Conn: whatever follows the preface, the proxy's HTTP/2 server neither panics nor hangs: once
// the client stops sending, the connection ends.
func FuzzH2Conn(f *testing.F) {
	var seeds [][]byte
	frame := func(fn func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer)) []byte {
		var b, hb bytes.Buffer
		fn(http2.NewFramer(&b, nil), hpack.NewEncoder(&hb), &hb)
		return b.Bytes()
	}
	hdrs := func(enc *hpack.Encoder, hb *bytes.Buffer, fields ...string) []byte {
		hb.Reset()
		for i := 0; i+1 < len(fields); i += 2 {
			_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return hb.Bytes()
	}
	seeds = append(seeds,
		frame(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
			_ = fr.WriteSettings()
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdrs(enc, hb, get2("/")...), EndStream: true, EndHeaders: true})
		}),
		frame(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
			_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10})
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdrs(enc, hb, ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/sum", "content-length", "3"), EndHeaders: true})
			_ = fr.WriteData(1, true, []byte("abc"))
			_ = fr.WriteWindowUpdate(1, 100)
			_ = fr.WritePing(false, [8]byte{})
			_ = fr.WriteRSTStream(1, http2.ErrCodeCancel)
		}),
		frame(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
			_ = fr.WriteSettings()
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdrs(enc, hb, ":method", "POST", ":scheme", "http", ":authority", "h", ":path", "/", "trailer", "x-t"), EndHeaders: true})
			_ = fr.WriteData(1, false, []byte("abc"))
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdrs(enc, hb, "x-t", "1"), EndStream: true, EndHeaders: true})
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: hdrs(enc, hb, get2("/hold")...), EndHeaders: false})
			_ = fr.WriteContinuation(3, true, nil)
			_ = fr.WriteGoAway(0, http2.ErrCodeNo, nil)
		}),
	)
	for _, s := range seeds {
		f.Add(s)
	}
	be := &h2Backend{held: make(chan struct{}, 1<<20), release: make(chan struct{}), cancelled: make(chan struct{}, 1<<20)}
	close(be.release)
	srv := &http.Server{Handler: be, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	f.Cleanup(func() { srv.Close() })
	port := freePortTB(f, false)
	cfg := &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{
		Name: "http", Port: port, Protocol: ir.ProtocolHTTP,
		VirtualHosts: []ir.VirtualHost{{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{irBackend("b", 1, ln.Addr())}}}}},
	}}}
	s, err := New(Options{Address: "127.0.0.1", IdleTimeout: 2 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Apply(cfg); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	addr := "127.0.0.1:" + strconv.Itoa(int(port))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			_, _ = io.WriteString(c, http2.ClientPreface)
			_, _ = c.Write(data)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		// Done sending: the connection must end (EOF, or reset) well within the deadline.
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open 20s after the client stopped sending %x", data)
		}
	})
}

// bodyOf reads r's body and names it: short ones verbatim, long ones by length and digest.
func bodyOf(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	if len(b) <= 16 {
		return string(b)
	}
	return fmt.Sprintf("%d bytes %x", len(b), sha256.Sum256(b))
}

// TestH2FastPathMatchesFullPath: a stream on a fast route (relayed over the pooled HTTP/1.1
// upstream connections) gets the answer a stream on an equivalent route served by the full path
// (ReverseProxy) gets: status, body, filtered headers, what the backend sees.
func TestH2FastPathMatchesFullPath(t *testing.T) {
	mux := http.NewServeMux()
	seen := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Seen", strings.Join([]string{r.Method, strings.TrimPrefix(strings.TrimPrefix(r.URL.RequestURI(), "/fast"), "/full"), r.Proto,
			r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Req"),
			r.Header.Get("Cookie"), strings.Join(r.Header.Values("X-Dup"), ","), r.Header.Get("Connection"),
			strconv.FormatInt(r.ContentLength, 10), bodyOf(r)}, "|"))
		w.Header().Set("X-Remove", "1")
		// Forwarded by ReverseProxy, dropped by the fast paths (hopKind), which relay no
		// response trailers: compared apart.
		w.Header().Set("X-Te", r.Header.Get("Te"))
		w.Header()["X-Dup"] = []string{"1", "2"}
		w.Header().Set("Server", "backend")
		w.Header().Set("Connection", "X-Hop")
		w.Header().Set("X-Hop", "dropped")
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		seen(w, r)
		_, _ = io.WriteString(w, "hello")
	})
	mux.HandleFunc("/{p}/chunked", func(w http.ResponseWriter, r *http.Request) {
		seen(w, r)
		for i := range 3 {
			_, _ = fmt.Fprintf(w, "part%d;", i)
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/{p}/status", func(w http.ResponseWriter, r *http.Request) {
		seen(w, r)
		w.WriteHeader(http.StatusTeapot)
	})
	mux.HandleFunc("/{p}/big", func(w http.ResponseWriter, r *http.Request) {
		seen(w, r)
		_, _ = w.Write(bytes.Repeat([]byte("y"), 100<<10))
	})
	mux.HandleFunc("/{p}/nocontent", func(w http.ResponseWriter, r *http.Request) {
		seen(w, r)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/{p}/notmodified", func(w http.ResponseWriter, r *http.Request) {
		seen(w, r)
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(http.StatusNotModified)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })

	filters := ir.Filters{
		RequestHeaders:  &ir.HeaderModifier{Set: []ir.Header{{Name: "X-Req", Value: "r"}}},
		ResponseHeaders: &ir.HeaderModifier{Set: []ir.Header{{Name: "X-Via", Value: "fleetgate"}}, Remove: []string{"X-Remove"}},
	}
	cert, _ := selfSigned(t, "a", "a.example")
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{
		{Name: "fast", Match: ir.Match{Path: prefix("/fast")}, Filters: filters, Backends: []ir.Backend{irBackend("b", 1, ln.Addr())}},
		// A request timeout keeps the route off the fast path.
		{Name: "full", Match: ir.Match{Path: prefix("/full")}, Filters: filters, Backends: []ir.Backend{irBackend("b", 1, ln.Addr())}, Timeouts: ir.Timeouts{Request: time.Minute}},
		// Without response header filters the fast path encodes the backend's lines as they are.
		{Name: "fastplain", Match: ir.Match{Path: prefix("/fastplain")}, Backends: []ir.Backend{irBackend("b", 1, ln.Addr())}},
		{Name: "fullplain", Match: ir.Match{Path: prefix("/fullplain")}, Backends: []ir.Backend{irBackend("b", 1, ln.Addr())}, Timeouts: ir.Timeouts{Request: time.Minute}},
	}})
	cfg.Listeners[0].Protocol, cfg.Listeners[0].Certificates = ir.ProtocolHTTPS, []ir.Certificate{cert}
	s := newProxyOpts(t, cfg, Options{})
	p := new(http.Protocols)
	p.SetHTTP2(true)
	tr := &http.Transport{Protocols: p, TLSClientConfig: &tls.Config{ServerName: "a.example", InsecureSkipVerify: true}, DisableCompression: true} //nolint:gosec // test
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	base := "https://127.0.0.1:" + strconv.Itoa(int(port))

	type answer struct {
		Code                           int
		Proto, Body, Seen, Via, Remove string
		Length                         int64
		// Header is every field of the answer but Date and X-Te, sorted.
		Header []string
		// Te is the TE the backend saw.
		Te string
	}
	fetch := func(method, path, body string) answer {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Add("Cookie", "a=1")
		req.Header.Add("Cookie", "b=2")
		req.Header.Add("X-Dup", "a")
		req.Header.Add("X-Dup", "b")
		req.Header.Set("Te", "trailers")
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("%s %s body: %v", method, path, err)
		}
		got := string(b)
		if len(got) > 64 {
			got = fmt.Sprintf("%d bytes", len(got))
		}
		var hdr []string
		for k, vs := range res.Header {
			if k != "Date" && k != "X-Te" {
				hdr = append(hdr, k+": "+strings.Join(vs, ","))
			}
		}
		slices.Sort(hdr)
		return answer{Code: res.StatusCode, Proto: res.Proto, Body: got, Seen: res.Header.Get("X-Seen"),
			Via: res.Header.Get("X-Via"), Remove: res.Header.Get("X-Remove"), Length: res.ContentLength, Header: hdr, Te: res.Header.Get("X-Te")}
	}
	for _, tt := range []struct{ method, path, body string }{
		{"GET", "/x?q=1", ""}, {"HEAD", "/x", ""}, {"POST", "/x", ""}, {"POST", "/x", "a body"}, {"PUT", "/x", strings.Repeat("b", 100<<10)},
		{"GET", "/chunked", ""}, {"GET", "/status", ""}, {"GET", "/big", ""}, {"HEAD", "/big", ""},
		{"GET", "/nocontent", ""}, {"GET", "/notmodified", ""}, {"GET", "/a%20b/../c?x=%2F", ""},
	} {
		for _, kind := range []string{"", "plain"} {
			full, fast := fetch(tt.method, "/full"+kind+tt.path, tt.body), fetch(tt.method, "/fast"+kind+tt.path, tt.body)
			full.Seen = strings.Replace(full.Seen, "/"+kind, "", 1)
			fast.Seen = strings.Replace(fast.Seen, "/"+kind, "", 1)
			if diff := cmp.Diff(full, fast, cmpopts.IgnoreFields(answer{}, "Te")); diff != "" {
				t.Errorf("%s %s%s: fast path differs from the full path (-full +fast):\n%s", tt.method, kind, tt.path, diff)
			}
			if fast.Code == 0 || fast.Proto != "HTTP/2.0" || (kind == "") != (fast.Via == "fleetgate") {
				t.Errorf("%s %s%s: %+v", tt.method, kind, tt.path, fast)
			}
			if full.Te != "trailers" && full.Code != http.StatusNoContent && full.Code != http.StatusNotModified || fast.Te != "" {
				t.Errorf("%s %s%s: backend saw TE %q on the full path, %q on the fast path; want trailers and none", tt.method, kind, tt.path, full.Te, fast.Te)
			}
		}
	}
	// The fast route's exchanges went over the fast path's pool.
	s.fastPool.mu.Lock()
	pooled := len(s.fastPool.idle[ln.Addr().String()])
	s.fastPool.mu.Unlock()
	if pooled == 0 {
		t.Error("no upstream connection in the fast path's pool: the fast route was not relayed by it")
	}
}

// BenchmarkProxyH2 relays bodiless GETs over one h2c connection, one stream at a time, through
// the proxy's own HTTP/2 server and through net/http's (DisableHTTP2Server); the raw client's own
// allocations are in both.
func BenchmarkProxyH2(b *testing.B) {
	be := &h2Backend{held: make(chan struct{}, 1), release: make(chan struct{}), cancelled: make(chan struct{}, 1)}
	srv := &http.Server{Handler: be, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { srv.Close() })
	for _, bc := range []struct {
		name string
		opts Options
	}{{"own", Options{}}, {"nethttp", Options{DisableHTTP2Server: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			port := freePortTB(b, false)
			s, err := New(Options{Address: "127.0.0.1", DisableHTTP2Server: bc.opts.DisableHTTP2Server})
			if err != nil {
				b.Fatal(err)
			}
			cfg := &ir.Config{Gateway: "ns/gw", Version: 1, Listeners: []ir.Listener{{Name: "http", Port: port, Protocol: ir.ProtocolHTTP,
				VirtualHosts: []ir.VirtualHost{{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{irBackend("b", 1, ln.Addr())}}}}}}}}
			if err := s.Apply(cfg); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Shutdown(context.Background()) }()
			cl := dialH2(b, "127.0.0.1:"+strconv.Itoa(int(port)), true)
			// The client reads answers without crediting them back: the connection's window must
			// last every b.N (at 65,535 bytes, a run past ~30k answers waited for it forever).
			if err := cl.fr.WriteWindowUpdate(0, 1<<31-1-65535); err != nil {
				b.Fatal(err)
			}
			block := cl.block(get2("/")...)
			id := uint32(1)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				_ = cl.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true})
				for {
					f, err := cl.fr.ReadFrame()
					if err != nil {
						b.Fatal(err)
					}
					if f.Header().StreamID == id && f.Header().Flags.Has(http2.FlagDataEndStream) {
						break
					}
				}
				id += 2
			}
		})
	}
}
