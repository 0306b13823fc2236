package proxy

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnswer(t *testing.T) {
	type result struct {
		Code    int
		Reason  string
		Length  int64
		Chunked bool
		Keep    bool
		// Relayed is what writeLines sends on, Header what header builds for modifiers: neither
		// has framing, which relayBody writes from Length and Chunked.
		Relayed string
		Header  http.Header
	}
	for _, tc := range []struct {
		name, head string
		want       result
		err        error
	}{{
		name: "keepalive with a length",
		head: "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n",
		want: result{200, "OK", 2, false, true, "Server: nginx\r\n",
			http.Header{"Server": {"nginx"}}},
	}, {
		name: "no headers, no reason",
		head: "HTTP/1.1 204\r\n\r\n",
		want: result{204, "", -1, false, true, "", http.Header{}},
	}, {
		name: "connection close",
		head: "HTTP/1.1 200 OK\r\nconnection: Close\r\nContent-Length: 0\r\n\r\n",
		want: result{200, "OK", 0, false, false, "", http.Header{}},
	}, {
		name: "HTTP/1.0 closes",
		head: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n",
		want: result{200, "OK", 1, false, false, "", http.Header{}},
	}, {
		name: "HTTP/1.0 with keep-alive",
		head: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 1\r\n\r\n",
		want: result{200, "OK", 1, false, true, "", http.Header{}},
	}, {
		name: "chunked wins over a length and keeps its trailer announcement",
		head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: Chunked \r\nTrailer: X-Sum\r\n\r\n",
		want: result{200, "OK", -1, true, true, "Trailer: X-Sum\r\n", http.Header{"Trailer": {"X-Sum"}}},
	}, {
		name: "trailer without chunked framing is dropped",
		head: "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nContent-Length: 1\r\n\r\n",
		want: result{200, "OK", 1, false, true, "", http.Header{}},
	}, {
		name: "repeated equal lengths collapse",
		head: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: 1\r\ncontent-length:3\r\n\r\n",
		want: result{200, "OK", 3, false, true, "X-A: 1\r\n",
			http.Header{"X-A": {"1"}}},
	}, {
		name: "headers named by Connection and other hop-by-hop headers are dropped",
		head: "HTTP/1.1 200 OK\r\nX-Secret: s\r\nConnection: x-secret, keep-alive\r\nUpgrade: h2c\r\nProxy-Connection: x\r\n" +
			"Te: trailers\r\nProxy-Authenticate: Basic\r\nProxy-Authorization: x\r\nx-a: 1\r\nX-A: 2\r\nContent-Length: 0\r\n\r\n",
		want: result{200, "OK", 0, false, true, "x-a: 1\r\nX-A: 2\r\n",
			http.Header{"X-A": {"1", "2"}}},
	}, {
		name: "Connection naming the framing cannot remove it",
		head: "HTTP/1.1 200 OK\r\nConnection: Content-Length, Transfer-Encoding\r\nContent-Length: 2\r\n\r\n",
		want: result{200, "OK", 2, false, true, "", http.Header{}},
	}, {
		name: "informational",
		head: "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n",
		want: result{103, "Early Hints", -1, false, true, "Link: </a.css>; rel=preload\r\n",
			http.Header{"Link": {"</a.css>; rel=preload"}}},
	},
		{name: "conflicting lengths", head: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", err: errLengths},
		{name: "signed length", head: "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n", err: errLength},
		{name: "length list", head: "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n", err: errLength},
		{name: "empty length", head: "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", err: errLength},
		{name: "bare CR in the reason", head: "HTTP/1.1 200 O\rK\r\nContent-Length: 0\r\n\r\n", err: errStatusLine},
		{name: "NUL in the reason", head: "HTTP/1.1 200 O\x00K\r\n\r\n", err: errStatusLine},
		{name: "encoding other than chunked", head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", err: errEncoding},
		{name: "encoding identity", head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 1\r\n\r\n", err: errEncoding},
		{name: "repeated encoding", head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", err: errEncoding},
		{name: "negative length", head: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", err: errLength},
		{name: "not HTTP", head: "ICY 200 OK\r\n\r\n", err: errStatusLine},
		{name: "short status line", head: "HTTP/1.1 20\r\n\r\n", err: errStatusLine},
		{name: "code not a number", head: "HTTP/1.1 2x0 OK\r\n\r\n", err: errStatusCode},
		{name: "header without a colon", head: "HTTP/1.1 200 OK\r\nX-A\r\n\r\n", err: errHeaderLine},
		{name: "folded header", head: "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\n\r\n", err: errHeaderLine},
		{name: "space before the colon", head: "HTTP/1.1 200 OK\r\nX-A : 1\r\n\r\n", err: errHeaderLine},
		{name: "bare LF", head: "HTTP/1.1 200 OK\r\nX-A: 1\nSet-Cookie: x\r\n\r\n", err: errHeaderLine},
		{name: "bare CR", head: "HTTP/1.1 200 OK\r\nX-A: 1\rSet-Cookie: x\r\n\r\n", err: errHeaderLine},
		{name: "control character in a value", head: "HTTP/1.1 200 OK\r\nX-A: 1\x00\r\n\r\n", err: errHeaderLine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf []byte
			a := &answer{}
			err := readAnswer(bufio.NewReader(strings.NewReader(tc.head+"body")), &buf, a)
			if err != tc.err {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			var out strings.Builder
			w := bufio.NewWriter(&out)
			a.writeLines(w, false)
			w.Flush()
			h := http.Header{"Stale": {"x"}}
			a.header(h, nil)
			got := result{a.code, a.reason, a.length, a.chunked, a.keep, out.String(), h}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHopKind(t *testing.T) {
	for k, want := range map[string]hop{
		"Connection": hopConnection, "CONNECTION": hopConnection, "transfer-encoding": hopTransferEncoding,
		"Trailer": hopTrailer, "Content-Length": hopContentLength, "te": hopDropped, "Upgrade": hopDropped,
		"Keep-Alive": hopDropped, "Proxy-Connection": hopDropped, "Proxy-Authenticate": hopDropped,
		"Proxy-Authorization": hopDropped, "Content-Type": hopOther, "Tf": hopOther, "Server": hopOther, "": hopOther,
	} {
		if got := hopKind(k); got != want {
			t.Errorf("hopKind(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestFoldEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"Content-Length", "content-length", true},
		{"KEEP-ALIVE", "keep-alive", true},
		{"close", "close", true},
		{"closed", "close", false},
		{"clos3", "close", false},
		{"[", "{", false}, // 0x5b and 0x7b differ by the case bit but are not letters
		{"", "", true},
		{"\xc5\xbf", "s", false},
	} {
		if got := foldEqual(tc.a, tc.b); got != tc.want {
			t.Errorf("foldEqual(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// BenchmarkAnswer is the per-request work on a typical backend answer's head: parse and relay.
func BenchmarkAnswer(b *testing.B) {
	head := "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 22:00:00 GMT\r\n" +
		"Content-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n"
	rd := strings.NewReader("")
	br := bufio.NewReaderSize(rd, 4096)
	bw := bufio.NewWriterSize(io.Discard, 4096)
	var buf []byte
	a := &answer{}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(head)
		br.Reset(rd)
		if err := readAnswer(br, &buf, a); err != nil {
			b.Fatal(err)
		}
		writeStatus(bw, a.code, a.reason)
		a.writeLines(bw, false)
		bw.Reset(io.Discard)
	}
}
