// Command loadgen sends HTTP/1.1 GETs at a fixed rate (open loop) over keepalive connections and
// prints latency percentiles as JSON. Latency counts from each request's scheduled send time, so a
// stalled proxy cannot hide its queueing (no coordinated omission). It speaks raw HTTP/1.1 rather than
// using net/http so that the generator, sharing a core with the backend, stays cheap.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

func main() {
	var (
		addr     = flag.String("addr", "127.0.0.1:18081", "target host:port")
		path     = flag.String("path", "/", "request path")
		host     = flag.String("host", "localhost", "Host header")
		rate     = flag.Int("rate", 1000, "requests per second")
		duration = flag.Duration("duration", 10*time.Second, "how long to send")
		conns    = flag.Int("conns", 32, "keepalive connections")
	)
	flag.Parse()
	req := []byte("GET " + *path + " HTTP/1.1\r\nHost: " + *host + "\r\nUser-Agent: loadgen\r\n\r\n")
	jobs := make(chan time.Time, *rate)
	var mu sync.Mutex
	var lats []time.Duration
	errs := 0
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() {
			var c net.Conn
			var br *bufio.Reader
			local := make([]time.Duration, 0, 1024)
			localErrs := 0
			for sched := range jobs {
				if c == nil {
					var err error
					if c, err = net.Dial("tcp", *addr); err != nil {
						localErrs++
						continue
					}
					br = bufio.NewReader(c)
				}
				if err := roundTrip(c, br, req); err != nil {
					localErrs++
					c.Close()
					c = nil
					continue
				}
				local = append(local, time.Since(sched))
			}
			if c != nil {
				c.Close()
			}
			mu.Lock()
			lats = append(lats, local...)
			errs += localErrs
			mu.Unlock()
		})
	}
	interval := time.Second / time.Duration(*rate)
	start := time.Now()
	for i := 0; ; i++ {
		sched := start.Add(time.Duration(i) * interval)
		if sched.Sub(start) >= *duration {
			break
		}
		if d := time.Until(sched); d > 0 {
			time.Sleep(d)
		}
		jobs <- sched
	}
	close(jobs)
	wg.Wait()
	slices.Sort(lats)
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return float64(lats[min(len(lats)-1, int(p*float64(len(lats))))]) / 1e6
	}
	out := map[string]any{"rate": *rate, "requests": len(lats) + errs, "errors": errs,
		"p50_ms": pct(0.50), "p99_ms": pct(0.99), "p999_ms": pct(0.999)}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// roundTrip writes one request and reads one response with a Content-Length body; anything but a
// 200 is an error.
func roundTrip(c net.Conn, br *bufio.Reader, req []byte) error {
	if _, err := c.Write(req); err != nil {
		return err
	}
	status, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200")) {
		return fmt.Errorf("status %q", bytes.TrimSpace(status))
	}
	length := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return err
			}
		}
	}
	_, err = br.Discard(length)
	if err == nil && length < 0 {
		err = io.ErrUnexpectedEOF
	}
	return err
}
