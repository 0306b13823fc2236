package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// TestH2UpstreamMultiplexed: concurrent HTTP/2 requests to an h2c backend share one warm backend
// connection. The backend answers none until all have arrived, so they are in flight together.
func TestH2UpstreamMultiplexed(t *testing.T) {
	const n = 20
	var conns atomic.Int64
	var arrived sync.WaitGroup
	all := make(chan struct{})
	be := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/warm" {
			_, _ = io.WriteString(w, "warm")
			return
		}
		arrived.Done()
		select {
		case <-all:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, r.Proto)
	}))
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	be.Config.Protocols = p
	be.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	be.Start()
	t.Cleanup(be.Close)
	b := irBackend("h2c", 1, be.Listener.Addr())
	b.AppProtocol = ir.AppH2C
	cfg, port := httpConfig(t, ir.VirtualHost{Hostname: "*", Routes: []ir.Route{{Name: "r", Backends: []ir.Backend{b}}}})
	newProxy(t, cfg)

	cp := new(http.Protocols)
	cp.SetUnencryptedHTTP2(true)
	// A guard against a hang, not a measurement: the requests wait for each other only.
	c := &http.Client{Transport: &http.Transport{Protocols: cp}, Timeout: 30 * time.Second}
	// One request first: the proxy's pool then holds a connection to multiplex on. (A burst at a
	// cold pool dials once per request: net/http's Transport shares no dial among them.)
	warm, err := c.Get(baseURL(port) + "/warm")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, warm.Body)
	warm.Body.Close()
	arrived.Add(n)
	go func() { arrived.Wait(); close(all) }()
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := c.Get(baseURL(port) + "/")
			if err != nil {
				got[i] = err.Error()
				return
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			got[i] = res.Proto + " → " + string(body)
		})
	}
	wg.Wait()
	want := make([]string, n)
	for i := range want {
		want[i] = "HTTP/2.0 → HTTP/2.0"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if c := conns.Load(); c != 1 {
		t.Errorf("%d requests in flight together took %d backend connections, want 1", n, c)
	}
}

// TestWatchBodyOnlyWhenSomethingCanArrive: the body idle watch (and the request copy it needs)
// is set up only for requests whose body can still bring bytes; an HTTP/2 request that ended
// with its headers has a server Body of length 0.
func TestWatchBodyOnlyWhenSomethingCanArrive(t *testing.T) {
	lim := &limits{requestBodyIdleTimeout: 30 * time.Second}
	hit := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	body := func() io.ReadCloser { return io.NopCloser(strings.NewReader("abc")) }
	tests := []struct {
		name   string
		major  int
		body   io.ReadCloser
		length int64
		// want is "none" (not watched) or the idle bound of the watch.
		want string
	}{
		{"no body", 1, nil, 0, "none"},
		{"NoBody", 1, http.NoBody, 0, "none"},
		{"h2 headers only", 2, body(), 0, "none"},
		{"h1 with length", 1, body(), 3, "30s"},
		{"h2 with length", 2, body(), 3, "30s"},
		{"h2 without length", 2, body(), -1, "0s"},
		{"h1 chunked", 1, body(), -1, "30s"},
	}
	var got, want []string
	for _, tt := range tests {
		r := httptest.NewRequestWithContext(context.Background(), "POST", "/", nil)
		r.ProtoMajor, r.Body, r.ContentLength = tt.major, tt.body, tt.length
		out, b := watchBody(r, lim, http.ResponseController{}, hit)
		res := "none"
		if b != nil {
			res = b.d.String()
			if out == r || out.Body != b {
				res += " (not the watched copy)"
			}
		} else if out != r {
			res += " (a copy)"
		}
		got = append(got, tt.name+": "+res)
		want = append(want, tt.name+": "+tt.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watches (-want +got):\n%s", diff)
	}
}

// readCounter counts the reads that reach a connection.
type readCounter struct {
	net.Conn
	reads int
}

func (c *readCounter) Read(p []byte) (int, error) {
	c.reads++
	return c.Conn.Read(p)
}

// TestHandedOffH2CReadsFramesBuffered: an h2c connection handed to net/http is read through a
// buffer, so that frames already arrived are taken in one read of the socket, not two per frame
// (header, payload) as net/http's HTTP/2 server reads them; an HTTP/1.1 one is not.
func TestHandedOffH2CReadsFramesBuffered(t *testing.T) {
	const frames = 10
	var wire bytes.Buffer
	fr := http2.NewFramer(&wire, nil)
	for i := range frames {
		if err := fr.WritePing(false, [8]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	preface := []byte(http2.ClientPreface)
	tests := []struct {
		name   string
		prefix []byte
		// want is how many reads of the socket the frames took.
		want int
	}{
		{"h2c", preface, 1},
		{"HTTP/1.1", []byte("GET / HTTP/1.1\r\n"), 2 * frames},
	}
	var got, want []string
	for _, tt := range tests {
		client, server := net.Pipe()
		rc := &readCounter{Conn: server}
		go func() {
			_, _ = client.Write(wire.Bytes())
			client.Close()
		}()
		c := handedOff(rc, tt.prefix)
		prefix := make([]byte, len(tt.prefix))
		if _, err := io.ReadFull(c, prefix); err != nil || !bytes.Equal(prefix, tt.prefix) {
			t.Fatalf("%s: prefix %q, %v", tt.name, prefix, err)
		}
		r := http2.NewFramer(nil, c)
		n := 0
		for ; n < frames; n++ {
			if _, err := r.ReadFrame(); err != nil {
				t.Fatalf("%s: frame %d: %v", tt.name, n, err)
			}
		}
		c.Close()
		got = append(got, fmt.Sprintf("%s: %d frames in %d reads", tt.name, n, rc.reads))
		want = append(want, fmt.Sprintf("%s: %d frames in %d reads", tt.name, frames, tt.want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestH2CtxFollowsItsStream: a stream's own context (h2Ctx) behaves as a context.WithCancel
// child of the connection's would: values pass through, Done and Err follow the stream's
// cancellation, and contexts derived from it (WithCancel, AfterFunc) are cancelled with it,
// registered through AfterFunc (no goroutine waiting on Done) and released by their stop.
func TestH2CtxFollowsItsStream(t *testing.T) {
	type key struct{}
	tests := []struct {
		name string
		// run derives from ctx, cancels the stream with cancel where it means to, and reports.
		run  func(ctx context.Context, cancel func()) string
		want string
	}{
		{"value of the connection", func(ctx context.Context, _ func()) string {
			return fmt.Sprint(ctx.Value(key{}))
		}, "conn"},
		{"err before and after", func(ctx context.Context, cancel func()) string {
			before := ctx.Err()
			cancel()
			return fmt.Sprint(before, " ", ctx.Err())
		}, "<nil> context canceled"},
		{"done closes", func(ctx context.Context, cancel func()) string {
			d := ctx.Done()
			cancel()
			<-d
			return "closed"
		}, "closed"},
		{"done asked after the cancel", func(ctx context.Context, cancel func()) string {
			cancel()
			<-ctx.Done()
			return "closed"
		}, "closed"},
		{"derived WithCancel", func(ctx context.Context, cancel func()) string {
			child, stop := context.WithCancel(ctx)
			defer stop()
			cancel()
			<-child.Done()
			return fmt.Sprint(child.Err(), " ", child.Value(key{}))
		}, "context canceled conn"},
		{"derived WithTimeout stopped first", func(ctx context.Context, cancel func()) string {
			child, stop := context.WithTimeout(ctx, time.Hour)
			stop()
			cancel()
			return fmt.Sprint(child.Err())
		}, "context canceled"},
		{"AfterFunc runs", func(ctx context.Context, cancel func()) string {
			ran := make(chan string, 1)
			context.AfterFunc(ctx, func() { ran <- "ran" })
			cancel()
			return <-ran
		}, "ran"},
		{"AfterFunc stopped", func(ctx context.Context, cancel func()) string {
			ran := make(chan string, 1)
			stop := context.AfterFunc(ctx, func() { ran <- "ran" })
			stopped := stop()
			cancel()
			// A second registration shows the cancellation ran the functions still registered.
			context.AfterFunc(ctx, func() { ran <- "late" })
			return fmt.Sprint(stopped, " ", <-ran)
		}, "true late"},
		{"cancel twice", func(ctx context.Context, cancel func()) string {
			cancel()
			cancel()
			return fmt.Sprint(ctx.Err())
		}, "context canceled"},
	}
	var got, want []string
	for _, tt := range tests {
		cc := &h2Conn{base: context.WithValue(context.Background(), key{}, "conn")}
		st := &h2Stream{cc: cc}
		ctx := &h2Ctx{st: st}
		got = append(got, tt.name+": "+tt.run(ctx, st.cancel))
		want = append(want, tt.name+": "+tt.want)
		if n := len(st.afters); n != 0 {
			got = append(got, fmt.Sprintf("%s: %d AfterFuncs left registered", tt.name, n))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
