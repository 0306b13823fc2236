package xds

import (
	"maps"
	"slices"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// sent is what one response carries, by resource name.
type sent struct {
	Version string
	Changed []string
	Removed []string
}

func summarize(resp *discoveryv3.DeltaDiscoveryResponse) *sent {
	if resp == nil {
		return nil
	}
	s := &sent{Version: resp.GetSystemVersionInfo(), Removed: slices.Sorted(slices.Values(resp.GetRemovedResources()))}
	for _, r := range resp.GetResources() {
		s.Changed = append(s.Changed, r.GetName())
	}
	slices.Sort(s.Changed)
	return s
}

func hosts(names ...string) *ir.Config {
	cfg := &ir.Config{Listeners: []ir.Listener{{Name: "http", Port: 80, Protocol: ir.ProtocolHTTP}}}
	for _, n := range names {
		cfg.Listeners[0].VirtualHosts = append(cfg.Listeners[0].VirtualHosts, ir.VirtualHost{Hostname: n,
			Routes: []ir.Route{{Name: "r-" + n, Backends: []ir.Backend{{Name: "b", Weight: 1}}}}})
	}
	return cfg
}

// withRoute returns a copy of cfg whose host i routes to backend be.
func withBackend(cfg *ir.Config, i int, be string) *ir.Config {
	next := *cfg
	next.Listeners = slices.Clone(cfg.Listeners)
	next.Listeners[0].VirtualHosts = slices.Clone(cfg.Listeners[0].VirtualHosts)
	vh := &next.Listeners[0].VirtualHosts[i]
	vh.Routes = []ir.Route{{Name: vh.Routes[0].Name, Backends: []ir.Backend{{Name: be, Weight: 1}}}}
	return &next
}

// withCert returns a copy of cfg with an HTTPS listener serving a certificate whose PEM is pem,
// in a new byte slice.
func withCert(cfg *ir.Config, pem string) *ir.Config {
	next := *cfg
	next.Listeners = append(slices.Clone(cfg.Listeners), ir.Listener{Name: "https", Port: 443, Protocol: ir.ProtocolHTTPS,
		Certificates: []ir.Certificate{{Name: "ns/cert", CertPEM: []byte(pem), KeyPEM: []byte("key of " + pem)}}})
	return &next
}

// TestDeltaResponses drives a subscription without a transport: each step answers the response
// due before it (if told), sets a config (if any) and checks what the next response carries.
func TestDeltaResponses(t *testing.T) {
	v1 := hosts("a.example.com", "b.example.com", "c.example.com")
	all := []string{"base", "host/http/a.example.com", "host/http/b.example.com", "host/http/c.example.com"}
	const ack, nack = "ack", "nack"
	type step struct {
		answer string     // "", ack or nack
		set    *ir.Config // nil: set nothing
		want   *sent      // nil: nothing is due
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "first config sends everything", steps: []step{
			{set: v1, want: &sent{Version: "1", Changed: all}},
		}},
		{name: "an equal config is not sent again", steps: []step{
			{set: v1, want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: hosts("a.example.com", "b.example.com", "c.example.com")},
		}},
		{name: "a changed host alone is sent", steps: []step{
			{set: v1, want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: withBackend(v1, 1, "other"), want: &sent{Version: "2", Changed: []string{"host/http/b.example.com"}}},
		}},
		{name: "a removed host is removed", steps: []step{
			{set: v1, want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: hosts("a.example.com", "c.example.com"), want: &sent{Version: "2", Removed: []string{"host/http/b.example.com"}}},
		}},
		{name: "a listener change sends the base only", steps: []step{
			{set: v1, want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: func() *ir.Config {
				c := hosts("a.example.com", "b.example.com", "c.example.com")
				c.Listeners = append(c.Listeners, ir.Listener{Name: "tcp", Port: 9000, Protocol: ir.ProtocolTCP})
				return c
			}(), want: &sent{Version: "2", Changed: []string{"base"}}},
		}},
		{name: "a renewed certificate sends the base only", steps: []step{
			{set: withCert(v1, "cert-1"), want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: withCert(v1, "cert-2"), want: &sent{Version: "2", Changed: []string{"base"}}},
		}},
		{name: "the same certificate from a new copy is not sent again", steps: []step{
			{set: withCert(v1, "cert-1"), want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: withCert(hosts("a.example.com", "b.example.com", "c.example.com"), "cert-1")},
		}},
		{name: "a base that differs but encodes the same is not sent again", steps: []step{
			{set: withCert(v1, "cert-1"), want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: func() *ir.Config {
				c := withCert(v1, "cert-1")
				c.Listeners[1].Certificates[0].Hostnames = []string{} // omitted on the wire, as nil is
				return c
			}()},
		}},
		{name: "changes while a response is unanswered wait and merge", steps: []step{
			{set: v1, want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: withBackend(v1, 0, "x"), want: &sent{Version: "2", Changed: []string{"host/http/a.example.com"}}},
			{set: withBackend(withBackend(v1, 0, "x"), 2, "y")},
			{set: hosts("a.example.com", "c.example.com")},
			// The proxy holds a@v2, b and c@v1: a goes back, b goes, c is as it was.
			{answer: ack, want: &sent{Version: "4", Changed: []string{"host/http/a.example.com"}, Removed: []string{"host/http/b.example.com"}}},
		}},
		{name: "after a NACK the rejected host is compared again", steps: []step{
			{set: v1, want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: withBackend(v1, 0, "bad"), want: &sent{Version: "2", Changed: []string{"host/http/a.example.com"}}},
			{answer: nack, set: withBackend(withBackend(v1, 0, "fixed"), 2, "y"),
				want: &sent{Version: "3", Changed: []string{"host/http/a.example.com", "host/http/c.example.com"}}},
		}},
		{name: "after a NACK, going back to what the proxy holds sends only the version", steps: []step{
			{set: v1, want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: withBackend(v1, 0, "bad"), want: &sent{Version: "2", Changed: []string{"host/http/a.example.com"}}},
			{answer: nack, set: hosts("a.example.com", "b.example.com", "c.example.com"), want: &sent{Version: "3"}},
		}},
		{name: "a NACKed version is not sent again", steps: []step{
			{set: v1, want: &sent{Version: "1", Changed: all}},
			{answer: ack, set: withBackend(v1, 0, "bad"), want: &sent{Version: "2", Changed: []string{"host/http/a.example.com"}}},
			{answer: nack},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(ServerOptions{Logger: testr.New(t)})
			sub := srv.subscribe(gwA, "pod-1", WireV2, 0, map[string]string{})
			var pending *discoveryv3.DeltaDiscoveryResponse
			for i, st := range tt.steps {
				if st.answer != "" {
					if _, ok := srv.answer(sub, pending.GetNonce(), "rejected", st.answer == nack); !ok {
						t.Fatalf("step %d: answer not taken", i)
					}
				}
				if st.set != nil {
					srv.SetConfig(gwA, st.set)
				}
				resp := srv.next(sub)
				if diff := cmp.Diff(st.want, summarize(resp)); diff != "" {
					t.Fatalf("step %d: response (-want +got):\n%s", i, diff)
				}
				if resp != nil {
					pending = resp
				}
			}
		})
	}
}

// TestSubscribeResync subscribes as a reconnecting proxy that reports what it holds.
func TestSubscribeResync(t *testing.T) {
	v1 := hosts("a.example.com", "b.example.com")
	tests := []struct {
		name string
		// held changes what the proxy holds, starting from v1's resources at applied.
		held    func(map[string]string)
		applied uint64
		set     *ir.Config // the current config, after v1
		want    *sent
		acked   uint64
	}{
		{name: "holds the current config", held: func(map[string]string) {}, applied: 1, acked: 1},
		{name: "holds an older config", held: func(map[string]string) {}, applied: 1, set: withBackend(v1, 0, "x"),
			want: &sent{Version: "2", Changed: []string{"host/http/a.example.com"}}},
		{name: "holds a host the config does not have", held: func(m map[string]string) { m["host/http/z.example.com"] = "1234" }, applied: 1,
			want: &sent{Version: "2", Removed: []string{"host/http/z.example.com"}}},
		{name: "holds a newer version from an earlier instance, same content", held: func(map[string]string) {}, applied: 7,
			want: &sent{Version: "8"}},
		{name: "same version number, other content", held: func(m map[string]string) { m["host/http/b.example.com"] = "1234" }, applied: 1,
			want: &sent{Version: "2", Changed: []string{"host/http/b.example.com"}}},
		{name: "holds nothing", held: func(m map[string]string) { clear(m) }, applied: 0,
			want: &sent{Version: "1", Changed: []string{"base", "host/http/a.example.com", "host/http/b.example.com"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(ServerOptions{Logger: testr.New(t)})
			srv.SetConfig(gwA, v1)
			first := srv.subscribe(gwA, "pod-1", WireV2, 0, map[string]string{})
			if _, ok := srv.answer(first, srv.next(first).GetNonce(), "", false); !ok {
				t.Fatal("first response not acknowledged")
			}
			srv.unsubscribe(first)
			if tt.set != nil {
				srv.SetConfig(gwA, tt.set)
			}
			held := maps.Clone(first.known)
			tt.held(held)
			sub := srv.subscribe(gwA, "pod-1", WireV2, tt.applied, held)
			resp := srv.next(sub)
			if diff := cmp.Diff(tt.want, summarize(resp)); diff != "" {
				t.Fatalf("response (-want +got):\n%s", diff)
			}
			if resp != nil {
				v, _ := parseVersion(resp.GetSystemVersionInfo())
				if _, ok := srv.answer(sub, resp.GetNonce(), "", false); !ok {
					t.Fatal("answer not taken")
				}
				tt.acked = v
			}
			want := GatewayStatus{Version: tt.acked, Replicas: []ReplicaStatus{{Node: "pod-1", Wire: WireV2, Acked: tt.acked}}}
			if diff := cmp.Diff(want, srv.Status(gwA)); diff != "" {
				t.Errorf("Status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetConfigRefusesDuplicateHosts(t *testing.T) {
	srv := NewServer(ServerOptions{Logger: testr.New(t)})
	v := srv.SetConfig(gwA, hosts("a.example.com"))
	for _, dup := range []*ir.Config{hosts("a.example.com", "a.example.com"), hosts("b.example.com", "b.example.com")} {
		if got := srv.SetConfig(gwA, dup); got != 0 {
			t.Errorf("SetConfig with a duplicate host = %d, want 0", got)
		}
	}
	if got := srv.Status(gwA).Version; got != v {
		t.Errorf("version after refused configs = %d, want %d", got, v)
	}
}

// TestSetConfigKeepsEqualHostsLatestRoutes: a host given again with equal routes in a new list
// (a translation pass that rebuilt every host) is unchanged, and the server compares the next
// config with that new list, so that translation handing it on again is seen at a glance.
func TestSetConfigKeepsEqualHostsLatestRoutes(t *testing.T) {
	srv := NewServer(ServerOptions{Logger: testr.New(t)})
	first := hosts("a.example.com", "b.example.com")
	v := srv.SetConfig(gwA, first)
	rebuilt := hosts("a.example.com", "b.example.com") // equal, every list new
	if got := srv.SetConfig(gwA, rebuilt); got != v {
		t.Fatalf("SetConfig of an equal config = %d, want version %d kept", got, v)
	}
	g := srv.gateways[gwA]
	for _, vh := range rebuilt.Listeners[0].VirtualHosts {
		kept := g.hosts["http"][vh.Hostname].vh.Routes
		if &kept[0] != &vh.Routes[0] {
			t.Errorf("host %s: the server compares with the routes of the first config, not those of the last", vh.Hostname)
		}
	}
	if got := srv.SetConfig(gwA, withBackend(rebuilt, 1, "other")); got == v {
		t.Errorf("a changed host after the equal config kept version %d", got)
	}
}
