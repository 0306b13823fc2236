package local

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/providers"
)

// newProvider runs a shell that sleeps in place of the proxy: the provider's job is the process's
// life cycle and addresses, not what it serves.
func newProvider(t *testing.T, exited chan<- string) *Provider {
	t.Helper()
	p, err := New(Options{
		Command:    []string{"/bin/sh", "-c", "exec sleep 60", "proxy"},
		XDSAddress: "127.0.0.1:1",
		Credentials: func(string) (Credentials, error) {
			return Credentials{CertPEM: []byte("c"), KeyPEM: []byte("k"), CAPEM: []byte("ca")}, nil
		},
		Dir:    t.TempDir(),
		OnExit: func(gw string) { exited <- gw },
		Log:    logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(t.Context()) })
	return p
}

func TestProcessLifecycle(t *testing.T) {
	exited := make(chan string, 4)
	p := newProvider(t, exited)
	ctx := t.Context()
	a := &providers.LoadBalancer{Gateway: "hub/default/a"}
	b := &providers.LoadBalancer{Gateway: "hub/default/b"}

	st, err := p.Ensure(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Ready || len(st.Addresses) != 1 {
		t.Fatalf("Ensure = %+v, want ready with one address", st)
	}
	pid := p.procs[a.Gateway].cmd.Process.Pid
	if _, err := os.Stat(filepath.Join(p.dir(a.Gateway), "tls.crt")); err != nil {
		t.Errorf("credentials not written: %v", err)
	}

	again, err := p.Ensure(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, again); diff != "" || p.procs[a.Gateway].cmd.Process.Pid != pid {
		t.Errorf("second Ensure changed something (-first +second):\n%s", diff)
	}

	stB, err := p.Ensure(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if stB.Addresses[0] == st.Addresses[0] {
		t.Errorf("two gateways share %s", st.Addresses[0].Value)
	}

	// A proxy that dies is reported, and the next Ensure starts it again on the same address.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case gw := <-exited:
		if gw != a.Gateway {
			t.Errorf("OnExit(%q), want %q", gw, a.Gateway)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnExit after the proxy died")
	}
	restarted, err := p.Ensure(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, restarted); diff != "" || p.procs[a.Gateway].cmd.Process.Pid == pid {
		t.Errorf("restart: same pid %v, status diff (-before +after):\n%s", p.procs[a.Gateway].cmd.Process.Pid == pid, diff)
	}

	// Delete stops it without reporting an exit, frees its address and files; twice is fine.
	proc := p.procs[a.Gateway]
	for range 2 {
		if err := p.Delete(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-proc.done:
	default:
		t.Error("proxy still running after Delete")
	}
	select {
	case gw := <-exited:
		t.Errorf("Delete reported an exit of %s", gw)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := os.Stat(p.dir(a.Gateway)); !os.IsNotExist(err) {
		t.Errorf("proxy files left after Delete: %v", err)
	}
}

func TestRequestedAddresses(t *testing.T) {
	p := newProvider(t, make(chan string, 1))
	ctx := t.Context()
	ip := func(v string) providers.Address {
		return providers.Address{Type: providers.AddressTypeIPAddress, Value: v}
	}
	other := &providers.LoadBalancer{Gateway: "hub/default/other", Addresses: []providers.Address{ip("127.9.9.9")}}
	if st, err := p.Ensure(ctx, other); err != nil || !st.Ready {
		t.Fatalf("Ensure(other) = %+v, %v", st, err)
	}
	// One gateway's addresses change step by step, as a user (or the conformance suite) edits them.
	steps := []struct {
		name      string
		addresses []providers.Address
		reason    string // empty: ready
		want      string // the address served; "" = the one derived from the key
	}{
		{"not loopback", []providers.Address{ip("192.0.2.1")}, providers.ReasonAddressNotUsable, ""},
		{"reserved loopback", []providers.Address{ip("127.0.0.5")}, providers.ReasonAddressNotUsable, ""},
		{"another gateway's", []providers.Address{ip("127.9.9.9")}, providers.ReasonAddressNotUsable, ""},
		{"hostname", []providers.Address{{Type: providers.AddressTypeHostname, Value: "gw.example.com"}}, providers.ReasonUnsupportedAddress, ""},
		{"two", []providers.Address{ip("127.10.0.1"), ip("127.10.0.2")}, providers.ReasonUnsupportedAddress, ""},
		{"one of two unusable", []providers.Address{ip("192.0.2.1"), ip("127.10.0.1")}, providers.ReasonAddressNotUsable, ""},
		{"usable", []providers.Address{ip("127.10.0.1")}, "", "127.10.0.1"},
		{"moved", []providers.Address{ip("127.10.0.2")}, "", "127.10.0.2"},
		{"empty value means any", []providers.Address{ip("")}, "", ""},
		{"none", nil, "", ""},
	}
	lb := &providers.LoadBalancer{Gateway: "hub/default/a"}
	derived := candidate(lb.Gateway, 0).String()
	for _, s := range steps {
		lb.Addresses = s.addresses
		st, err := p.Ensure(ctx, lb)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.reason != "" {
			if st.Ready || st.Reason != s.reason {
				t.Errorf("%s: Ensure = %+v, want not ready, %s", s.name, st, s.reason)
			}
			if p.procs[lb.Gateway] != nil {
				t.Errorf("%s: a proxy runs for a gateway whose address cannot be served", s.name)
			}
			continue
		}
		want := s.want
		if want == "" {
			want = derived
		}
		if diff := cmp.Diff([]providers.Address{ip(want)}, st.Addresses); !st.Ready || diff != "" {
			t.Errorf("%s: Ensure = %+v, want ready on %s", s.name, st, want)
		}
		if got := p.procs[lb.Gateway].addr.String(); got != want {
			t.Errorf("%s: proxy bound to %s, want %s", s.name, got, want)
		}
	}
	if len(p.addrs) != 2 {
		t.Errorf("addresses held = %v, want the other gateway's and a's only", p.addrs)
	}
}

// TestListFindsStateOfAStoppedOperator: a gateway's state directory outlives the operator (Stop), is
// found by a new provider from its tag alone, and goes with Delete; directories without a tag
// that names them are not the provider's and stay.
func TestListFindsStateOfAStoppedOperator(t *testing.T) {
	ctx := t.Context()
	p := newProvider(t, make(chan string, 1))
	lb := &providers.LoadBalancer{Gateway: "hub/apps/web", Namespace: "apps", Name: "web"}
	if _, err := p.Ensure(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	untagged := filepath.Join(p.opts.Dir, "untagged")
	mistagged := filepath.Join(p.opts.Dir, providers.GatewayID("hub/apps/other"))
	for _, d := range []string{untagged, mistagged} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(mistagged, ownerFile), []byte(`{"gateway":"hub/apps/web"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	fresh, err := New(p.opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fresh.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.LoadBalancer{{Gateway: "hub/apps/web", Namespace: "apps", Name: "web", Provider: "incluster"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("List (-want +got):\n%s", d)
	}
	if err := fresh.Delete(ctx, &got[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.dir(lb.Gateway)); !os.IsNotExist(err) {
		t.Errorf("state after Delete of the listed gateway: %v", err)
	}
	for _, d := range []string{untagged, mistagged} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s, not the provider's, went: %v", d, err)
		}
	}
	if got, err := fresh.List(ctx); err != nil || len(got) != 0 {
		t.Errorf("List after Delete = %v, %v; want nothing", got, err)
	}
}

// TestAddressTaken occupies the gateway's hashed address and port first, as another program on
// the machine might: the proxy goes to the next address instead of failing to bind. With the
// port taken on every address (a wildcard listener), the gateway is refused with a reason.
func TestAddressTaken(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport providers.Transport
	}{
		{name: "tcp", transport: providers.TransportTCP},
		{name: "udp", transport: providers.TransportUDP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, make(chan string, 4))
			gw := "hub/default/" + tc.name
			hashed := candidate(gw, 0)
			var port int
			if tc.transport == providers.TransportUDP {
				c, err := net.ListenPacket("udp", netip.AddrPortFrom(hashed, 0).String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				port = c.LocalAddr().(*net.UDPAddr).Port
			} else {
				l, err := net.Listen("tcp", netip.AddrPortFrom(hashed, 0).String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				port = l.Addr().(*net.TCPAddr).Port
			}
			lb := &providers.LoadBalancer{Gateway: gw, Ports: []providers.Port{{Port: int32(port), Transport: tc.transport}}} //nolint:gosec // a port
			st, err := p.Ensure(t.Context(), lb)
			if err != nil {
				t.Fatal(err)
			}
			want := providers.Status{Ready: true, Reason: providers.ReasonProgrammed,
				Addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: candidate(gw, 1).String()}}}
			if diff := cmp.Diff(want, st); diff != "" {
				t.Errorf("Ensure with the hashed address taken (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("taken everywhere", func(t *testing.T) {
		p := newProvider(t, make(chan string, 4))
		l, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		lb := &providers.LoadBalancer{Gateway: "hub/default/c",
			Ports: []providers.Port{{Port: int32(l.Addr().(*net.TCPAddr).Port), Transport: providers.TransportTCP}}} //nolint:gosec // a port
		st, err := p.Ensure(t.Context(), lb)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready || st.Reason != providers.ReasonAddressNotUsable {
			t.Errorf("Ensure = %+v, want not ready, %s", st, providers.ReasonAddressNotUsable)
		}
		if p.procs[lb.Gateway] != nil {
			t.Error("a proxy runs for a gateway with no address")
		}
	})
}

// TestProxyLifeline: a proxy gets a lifeline, a pipe whose read end it holds at the descriptor
// its environment names, and whose write end only the operator holds, until the proxy is gone.
func TestProxyLifeline(t *testing.T) {
	p := newProvider(t, make(chan string, 1))
	ctx := t.Context()
	lb := &providers.LoadBalancer{Gateway: "hub/default/a"}
	if _, err := p.Ensure(ctx, lb); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(p.procs[lb.Gateway].cmd.Process.Pid)
	// It reads as empty while the shell execs sleep.
	var environ []byte
	for i := 0; i < 100 && len(environ) == 0; i++ {
		time.Sleep(time.Duration(i) * time.Millisecond)
		var err error
		if environ, err = os.ReadFile(filepath.Join("/proc", pid, "environ")); err != nil {
			t.Fatal(err)
		}
	}
	var fd string
	for kv := range strings.SplitSeq(string(environ), "\x00") {
		if v, ok := strings.CutPrefix(kv, lifelineEnv+"="); ok {
			fd = v
		}
	}
	if fd == "" {
		t.Fatalf("the proxy's environment has no %s", lifelineEnv)
	}
	pipe, err := os.Readlink(filepath.Join("/proc", pid, "fd", fd))
	if err != nil || !strings.HasPrefix(pipe, "pipe:") {
		t.Fatalf("the proxy's descriptor %s is %q (%v), want a pipe", fd, pipe, err)
	}
	ends := func(pid string) []string {
		var got []string
		fds, _ := os.ReadDir(filepath.Join("/proc", pid, "fd"))
		for _, f := range fds {
			if l, _ := os.Readlink(filepath.Join("/proc", pid, "fd", f.Name())); l != pipe {
				continue
			}
			info, _ := os.ReadFile(filepath.Join("/proc", pid, "fdinfo", f.Name()))
			flags := regexp.MustCompile(`flags:\s*([0-7]+)`).FindStringSubmatch(string(info))
			if flags == nil {
				t.Fatalf("no flags in /proc/%s/fdinfo/%s: %q", pid, f.Name(), info)
			}
			mode, _ := strconv.ParseUint(flags[1], 8, 32)
			got = append(got, map[uint64]string{syscall.O_RDONLY: "read", syscall.O_WRONLY: "write"}[mode&syscall.O_ACCMODE])
		}
		return got
	}
	if diff := cmp.Diff([]string{"read"}, ends(pid)); diff != "" {
		t.Errorf("the proxy's ends of its lifeline (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"write"}, ends("self")); diff != "" {
		t.Errorf("the operator's ends of the proxy's lifeline (-want +got):\n%s", diff)
	}
	if err := p.Delete(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if got := ends("self"); len(got) != 0 {
		t.Errorf("the operator still holds %v end(s) of a stopped proxy's lifeline", got)
	}
}
