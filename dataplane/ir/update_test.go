package ir

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPatch(t *testing.T) {
	vh := func(name string) VirtualHost {
		return VirtualHost{Hostname: name, Routes: []Route{{Name: "r-" + name}}}
	}
	base := func(names ...string) *Config {
		c := &Config{Gateway: "ns/gw"}
		for _, n := range names {
			c.Listeners = append(c.Listeners, Listener{Name: n, Port: 80, Protocol: ProtocolHTTP})
		}
		return c
	}
	cur := base("http")
	cur.Version = 1
	cur.Listeners[0].VirtualHosts = []VirtualHost{vh("a"), vh("b")}
	tests := []struct {
		name string
		c    *Config
		u    Update
		want *Config // its Gateway and Version are the update's
		err  string
	}{
		{name: "add", c: cur, u: Update{Hosts: []ListenerHost{{Listener: "http", Host: vh("c")}}},
			want: &Config{Listeners: []Listener{{Name: "http", Port: 80, Protocol: ProtocolHTTP, VirtualHosts: []VirtualHost{vh("a"), vh("b"), vh("c")}}}}},
		{name: "replace", c: cur, u: Update{Hosts: []ListenerHost{{Listener: "http", Host: VirtualHost{Hostname: "a"}}}},
			want: &Config{Listeners: []Listener{{Name: "http", Port: 80, Protocol: ProtocolHTTP, VirtualHosts: []VirtualHost{vh("b"), {Hostname: "a"}}}}}},
		{name: "remove", c: cur, u: Update{Removed: []HostKey{{Listener: "http", Hostname: "a"}}},
			want: &Config{Listeners: []Listener{{Name: "http", Port: 80, Protocol: ProtocolHTTP, VirtualHosts: []VirtualHost{vh("b")}}}}},
		{name: "new base keeps the hosts", c: cur, u: Update{Base: base("http", "other")},
			want: &Config{Listeners: []Listener{{Name: "http", Port: 80, Protocol: ProtocolHTTP, VirtualHosts: []VirtualHost{vh("a"), vh("b")}},
				{Name: "other", Port: 80, Protocol: ProtocolHTTP}}}},
		{name: "first", u: Update{Base: base("http"), Hosts: []ListenerHost{{Listener: "http", Host: vh("a")}}},
			want: &Config{Listeners: []Listener{{Name: "http", Port: 80, Protocol: ProtocolHTTP, VirtualHosts: []VirtualHost{vh("a")}}}}},
		{name: "first without a base", u: Update{}, err: "no base"},
		{name: "removes what is not there", c: cur, u: Update{Removed: []HostKey{{Listener: "http", Hostname: "z"}}}, err: "does not have"},
		{name: "first removes", u: Update{Base: base("http"), Removed: []HostKey{{Listener: "http", Hostname: "a"}}}, err: "does not have"},
		{name: "hosts left on a removed listener", c: cur, u: Update{Base: base("other")}, err: `listener "http"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.u.Gateway, tt.u.Version = "ns/gw", 2
			got, err := tt.c.Patch(&tt.u)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Patch = %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Gateway, tt.want.Version = "ns/gw", 2
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Patch (-want +got):\n%s", diff)
			}
		})
	}
}
