package local

import (
	"os"
	"path/filepath"
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

func TestRequestedAddressesAreRefused(t *testing.T) {
	p := newProvider(t, make(chan string, 1))
	lb := &providers.LoadBalancer{Gateway: "hub/default/a",
		Addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: "192.0.2.1"}}}
	st, err := p.Ensure(t.Context(), lb)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready || st.Reason != providers.ReasonUnsupportedAddress {
		t.Errorf("Ensure with a requested address = %+v, want not ready, UnsupportedAddress", st)
	}
}
