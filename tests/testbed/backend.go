package testbed

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"time"
)

// BackendIP returns 198.18.0.n, an address of the benchmarking range (RFC 2544) that AddBackendIP puts
// on the loopback device. EndpointSlices may not name loopback addresses, but traffic to this one
// still never leaves the machine.
func BackendIP(n byte) string { return fmt.Sprintf("198.18.0.%d", n) }

// AddBackendIP adds ip/32 to the loopback device (root only) unless it is there, and returns a
// function that removes it again if this call added it.
func AddBackendIP(ip string) (remove func() error, err error) {
	if hasLocalIP(ip) {
		return func() error { return nil }, nil
	}
	out, err := exec.Command("ip", "addr", "add", ip+"/32", "dev", "lo").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "File exists") {
		return nil, fmt.Errorf("adding %s to lo (needs root and iproute2): %w: %s", ip, err, out)
	}
	return func() error {
		if out, err := exec.Command("ip", "addr", "del", ip+"/32", "dev", "lo").CombinedOutput(); err != nil {
			return fmt.Errorf("removing %s from lo: %w: %s", ip, err, out)
		}
		return nil
	}, nil
}

func hasLocalIP(ip string) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.String() == ip {
			return true
		}
	}
	return false
}

// Echo is a backend that answers every request with "<name> <method> <host><path>\n" and echoes
// the request headers back prefixed with "Echo-".
type Echo struct {
	Name string
	Addr string
	srv  *http.Server
}

// StartEcho serves an Echo on addr (host:port).
func StartEcho(name, addr string) (*Echo, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("echo %s: %w", name, err)
	}
	e := &Echo{Name: name, Addr: lis.Addr().String()}
	e.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range r.Header {
			w.Header()["Echo-"+k] = v
		}
		fmt.Fprintf(w, "%s %s %s%s\n", name, r.Method, r.Host, r.URL.RequestURI())
	})}
	go func() { _ = e.srv.Serve(lis) }()
	return e, nil
}

// Close stops the echo server.
func (e *Echo) Close() error {
	if err := e.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
