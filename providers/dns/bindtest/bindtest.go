// Package bindtest starts a BIND9 name server (the Debian package bind9, `make bind9`) for tests
// of the embedded DNS publisher: one primary zone on 127.0.0.1 that takes dynamic updates and
// zone transfers signed with a TSIG key, in a temporary directory.
package bindtest

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/fleetgate/fleetgate/providers/tied"
)

// EnvNamed names the named executable; otherwise /usr/sbin/named, then named on PATH.
const EnvNamed = "FLEETGATE_NAMED"

// KeyName and Algorithm of the server's TSIG key.
const (
	KeyName   = "fleetgate-test"
	Algorithm = "hmac-sha256"
)

// Server is a running named.
type Server struct {
	// Addr is host:port, for TCP and UDP.
	Addr string
	Host string
	Port int
	// Zone is the test zone's apex, without the trailing dot.
	Zone string
	// Secret is the TSIG key's base64 secret.
	Secret string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Find returns the named executable.
func Find() (string, error) {
	if p := os.Getenv(EnvNamed); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvNamed, p, err)
		}
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/named"); err == nil {
		return "/usr/sbin/named", nil
	}
	p, err := exec.LookPath("named")
	if err != nil {
		return "", fmt.Errorf("named not found (or set %s): %w", EnvNamed, err)
	}
	return p, nil
}

// Require starts named with zone (e.g. "example.test") holding the extra zone-file lines, and
// stops it when the test ends. Without named it skips the test, or fails it in CI ($CI set).
func Require(t testing.TB, zone string, extra ...string) *Server {
	t.Helper()
	bin, err := Find()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("BIND9 is required in CI: %v", err)
		}
		t.Skipf("skipping: BIND9 is not installed (run `make bind9`; CI fails instead of skipping): %v", err)
	}
	s, err := Start(bin, t.TempDir(), zone, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Start starts bin (named) in dir on a free loopback port and waits until it serves zone.
func Start(bin, dir, zone string, extra ...string) (*Server, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		Host: "127.0.0.1", Port: port, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Zone: zone, Secret: base64.StdEncoding.EncodeToString(key), exited: make(chan struct{}),
	}
	conf := fmt.Sprintf(`options {
	directory %[1]q;
	pid-file %[8]q;
	session-keyfile none;
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
	allow-query { any; };
};
controls { };
key %[3]q { algorithm %[4]s; secret %[5]q; };
zone %[6]q {
	type primary;
	file %[7]q;
	allow-update { key %[3]q; };
	allow-transfer { key %[3]q; };
};
`, dir, port, KeyName, Algorithm, s.Secret, zone, filepath.Join(dir, "zone.db"), filepath.Join(dir, "named.pid"))
	db := fmt.Sprintf(`$TTL 60
@	IN SOA ns.%[1]s. hostmaster.%[1]s. 1 60 60 600 60
@	IN NS ns.%[1]s.
ns	IN A 127.0.0.1
%[2]s
`, zone, strings.Join(extra, "\n"))
	confPath := filepath.Join(dir, "named.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "zone.db"), []byte(db), 0o600); err != nil {
		return nil, err
	}
	// -g: foreground, logs on stderr; -n 1: one worker thread (two cores, shared).
	s.cmd = exec.Command(bin, "-g", "-n", "1", "-c", confPath)
	logf, err := os.Create(filepath.Join(dir, "named.log"))
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	waited, err := tied.Start(s.cmd, syscall.SIGKILL)
	if err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		s.err = <-waited
		_ = logf.Close()
		close(s.exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := s.Query(zone, dns.TypeSOA); err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(filepath.Join(dir, "named.log"))
			return nil, fmt.Errorf("named exited before it served %s: %v\n%s", zone, s.err, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("named did not serve %s on %s within 20s", zone, s.Addr)
		}
	}
}

// Stop stops named and waits for it.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Query asks the server for name's records of type t (dns.TypeA, ...) over UDP, as a resolver
// would, and returns the answer section.
func (s *Server) Query(name string, t uint16) ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), t)
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, s.Addr)
	if err != nil {
		return nil, err
	}
	if r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError {
		return nil, fmt.Errorf("query %s %s: %s", name, dns.TypeToString[t], dns.RcodeToString[r.Rcode])
	}
	return r.Answer, nil
}

// Transfer returns every record of the zone (AXFR signed with the key), without the SOA.
func (s *Server) Transfer() ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(s.Zone))
	m.SetTsig(dns.Fqdn(KeyName), dns.HmacSHA256, 300, time.Now().Unix())
	tr := &dns.Transfer{TsigSecret: map[string]string{dns.Fqdn(KeyName): s.Secret}}
	env, err := tr.In(m, s.Addr)
	if err != nil {
		return nil, err
	}
	var out []dns.RR
	for e := range env {
		if e.Error != nil {
			return nil, e.Error
		}
		for _, rr := range e.RR {
			if rr.Header().Rrtype != dns.TypeSOA {
				out = append(out, rr)
			}
		}
	}
	return out, nil
}

// freePort returns a loopback port free for TCP and UDP when asked.
func freePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		_ = l.Close()
		if err == nil {
			_ = u.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free loopback port for TCP and UDP")
}
