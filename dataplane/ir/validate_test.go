package ir

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	good := func() Config {
		return Config{Gateway: "default/gw", Version: 1, Listeners: []Listener{{
			Name: "http-80", Port: 80, Protocol: ProtocolHTTP,
			VirtualHosts: []VirtualHost{{Hostname: "*", Routes: []Route{{
				Name:     "httproute/default/r/0/0",
				Match:    Match{Path: &StringMatch{Type: MatchPrefix, Value: "/"}},
				Filters:  Filters{Rewrite: &Rewrite{Path: &PathModifier{Type: ReplacePrefixMatch, Value: "/x"}}},
				Backends: []Backend{{Name: "c/default/svc:80", Weight: 1, Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 8080}}}},
			}}}},
		}}}
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // substring of the error; empty means valid
	}{
		{name: "valid", mutate: func(*Config) {}},
		{name: "duplicate port", mutate: func(c *Config) {
			l := c.Listeners[0]
			l.Name = "other"
			c.Listeners = append(c.Listeners, l)
		}, want: "already used"},
		{name: "tcp and udp share a port", mutate: func(c *Config) {
			c.Listeners = append(c.Listeners, Listener{Name: "udp", Port: 80, Protocol: ProtocolUDP})
		}},
		{name: "bad regex", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Match.Path = &StringMatch{Type: MatchRegex, Value: "("}
		}, want: "missing closing"},
		{name: "bad header regex names its place", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Match.Headers = []KeyMatch{{Name: "X-A", Type: MatchRegex, Value: "("}}
		}, want: `listener "http-80" host "*" route "httproute/default/r/0/0" header "X-A": error parsing regexp`},
		{name: "bad path regex names its place", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Match.Path = &StringMatch{Type: MatchRegex, Value: "("}
		}, want: `listener "http-80" host "*" route "httproute/default/r/0/0" path: error parsing regexp`},
		{name: "prefix rewrite without prefix match", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Match.Path.Type = MatchExact
		}, want: "ReplacePrefixMatch needs"},
		{name: "https without certificates", mutate: func(c *Config) {
			c.Listeners[0].Protocol = ProtocolHTTPS
		}, want: "without certificates"},
		{name: "bad endpoint", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Backends[0].Endpoints[0].Port = 0
		}, want: "bad endpoint"},
		{name: "bad redirect status", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.Redirect = &Redirect{StatusCode: 200}
		}, want: "redirect status 200"},
		{name: "source ranges", mutate: func(c *Config) {
			c.Listeners[0].SourceRanges = []string{"10.0.0.0/8", "2001:db8::/32", "192.0.2.1/32"}
		}},
		{name: "bad source range", mutate: func(c *Config) {
			c.Listeners[0].SourceRanges = []string{"10.0.0.0/33"}
		}, want: "source range"},
		{name: "source range without prefix length", mutate: func(c *Config) {
			c.Listeners[0].SourceRanges = []string{"10.0.0.1"}
		}, want: "source range"},
		{name: "single-label wildcard", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Hostname = "*.foo.com"
			c.Listeners[0].VirtualHosts[0].SingleLabelWildcard = true
		}},
		{name: "single-label on an exact host", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Hostname = "foo.com"
			c.Listeners[0].VirtualHosts[0].SingleLabelWildcard = true
		}, want: "not a wildcard"},
		{name: "duplicate host", mutate: func(c *Config) {
			vh := c.Listeners[0].VirtualHosts[0]
			vh.Hostname = "A.example.com."
			c.Listeners[0].VirtualHosts = append(c.Listeners[0].VirtualHosts, vh, vh)
			c.Listeners[0].VirtualHosts[0].Hostname = "a.example.com"
		}, want: `listener "http-80" host "A.example.com.": duplicate host`},
		{name: "the same host on two listeners", mutate: func(c *Config) {
			l := c.Listeners[0]
			l.Name, l.Port = "http-8080", 8080
			c.Listeners = append(c.Listeners, l)
		}},
		{name: "unknown protocol", mutate: func(c *Config) {
			c.Listeners[0].Protocol = "SCTP"
		}, want: "unknown protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.want)
			}
		})
	}
}
