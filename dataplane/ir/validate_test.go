package ir

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
		{name: "server header set", mutate: func(c *Config) {
			c.Limits = &Limits{ServerHeader: ServerHeaderSet, ServerHeaderValue: "edge/1.0"}
		}},
		{name: "server header unknown mode", mutate: func(c *Config) {
			c.Limits = &Limits{ServerHeader: "Append"}
		}, want: `unknown server header mode "Append"`},
		{name: "server header value with CRLF", mutate: func(c *Config) {
			c.Limits = &Limits{ServerHeaderValue: "x\r\nSet-Cookie: a=b"}
		}, want: "not a valid header value"},
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
		{name: "endpoint placement", mutate: func(c *Config) {
			e := &c.Listeners[0].VirtualHosts[0].Routes[0].Backends[0].Endpoints[0]
			e.Zone, e.Node = "europe-west1-b", "gke-pool-1-abc.internal"
		}},
		{name: "bad endpoint zone", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Backends[0].Endpoints[0].Zone = "zone/../x"
		}, want: "bad zone"},
		{name: "bad endpoint node", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Backends[0].Endpoints[0].Node = "Node\n"
		}, want: "bad zone"},
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
		{name: "request header value with CR LF", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.RequestHeaders = &HeaderModifier{Set: []Header{{Name: "X-A", Value: "v\r\nX-Injected: 1"}}}
		}, want: `route "httproute/default/r/0/0" request headers set: value of header "X-A" holds CR, LF`},
		{name: "response header value with NUL", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.ResponseHeaders = &HeaderModifier{Add: []Header{{Name: "X-A", Value: "a\x00"}}}
		}, want: "response headers add: value"},
		{name: "header value with tab and obs-text", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.ResponseHeaders = &HeaderModifier{Add: []Header{{Name: "X-A", Value: "a\tb \xe9"}}}
		}},
		{name: "header value with DEL", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.ResponseHeaders = &HeaderModifier{Add: []Header{{Name: "X-A", Value: "a\x7f"}}}
		}, want: "control character"},
		{name: "header name not a token", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.RequestHeaders = &HeaderModifier{Set: []Header{{Name: "X A", Value: "v"}}}
		}, want: "not an RFC 9110 token"},
		{name: "framing header modifier", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.RequestHeaders = &HeaderModifier{Set: []Header{{Name: "content-length", Value: "0"}}}
		}, want: `header "content-length" is managed by the proxy`},
		{name: "host header removal", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.RequestHeaders = &HeaderModifier{Remove: []string{"Host"}}
		}, want: "request headers remove"},
		{name: "backend filter header value", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Backends[0].Filters.ResponseHeaders = &HeaderModifier{Set: []Header{{Name: "X-A", Value: "\nSet-Cookie: a=b"}}}
		}, want: `backend "c/default/svc:80" response headers set`},
		{name: "header match name not a token", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Match.Headers = []KeyMatch{{Name: "X:A", Type: MatchExact, Value: "v"}}
		}, want: "not a valid header name"},
		{name: "cors values", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.CORS = &CORS{AllowOrigins: []string{"https://*.example.com", "*"},
				AllowHeaders: []string{"*", "X-A"}, AllowMethods: []string{"GET", "*"}, ExposeHeaders: []string{"X-B"}}
		}},
		{name: "cors header with CR LF", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.CORS = &CORS{ExposeHeaders: []string{"X-B\r\nSet-Cookie: a=b"}}
		}, want: "cors: \"X-B\\r\\nSet-Cookie: a=b\" is not an RFC 9110 token"},
		{name: "cors origin with LF", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.CORS = &CORS{AllowOrigins: []string{"https://a.example\nX: 1"}}
		}, want: "cors: origin"},
		{name: "rewrite hostname with CR LF", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.Rewrite.Hostname = "a.example\r\nX-Injected: 1"
		}, want: "rewrite: hostname"},
		{name: "redirect hostname with a space", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters = Filters{Redirect: &Redirect{StatusCode: 302, Hostname: "a b"}}
		}, want: "redirect: hostname"},
		{name: "retry attempts above the default limit", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Retry = &Retry{Attempts: 2_000_000_000}
		}, want: "retry attempts 2000000000 above the limit 5"},
		{name: "retry attempts at the limit", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Retry = &Retry{Attempts: DefaultMaxRetryAttempts}
		}},
		{name: "retry attempts within the config's limit", mutate: func(c *Config) {
			c.Limits = &Limits{MaxRetryAttempts: 8}
			c.Listeners[0].VirtualHosts[0].Routes[0].Retry = &Retry{Attempts: 8}
		}},
		{name: "retry attempts above the config's limit", mutate: func(c *Config) {
			c.Limits = &Limits{MaxRetryAttempts: 2}
			c.Listeners[0].VirtualHosts[0].Routes[0].Retry = &Retry{Attempts: 3}
		}, want: "above the limit 2"},
		{name: "path regex program too large", mutate: func(c *Config) {
			c.Listeners[0].VirtualHosts[0].Routes[0].Match.Path = &StringMatch{Type: MatchRegex, Value: "/" + strings.Repeat("(abc|def)", 130)}
			c.Listeners[0].VirtualHosts[0].Routes[0].Filters.Rewrite = nil
		}, want: "path: regex program of 1173 instructions above the limit 1000"},
		{name: "header regex program above the config's limit", mutate: func(c *Config) {
			c.Limits = &Limits{MaxRegexInstructions: 10}
			c.Listeners[0].VirtualHosts[0].Routes[0].Match.Headers = []KeyMatch{{Name: "X-A", Type: MatchRegex, Value: "[a-z]{20}"}}
		}, want: `header "X-A": regex program`},
		{name: "query regex within the config's limit", mutate: func(c *Config) {
			c.Limits = &Limits{MaxRegexInstructions: 5000}
			c.Listeners[0].VirtualHosts[0].Routes[0].Match.QueryParams = []KeyMatch{{Name: "q", Type: MatchRegex, Value: "[a-z]{800}[0-9]{800}"}}
		}},
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

// ValidateHost, used by incremental updates, applies the config's limits as Validate does.
func TestValidateHostLimits(t *testing.T) {
	vh := VirtualHost{Hostname: "a.example", Routes: []Route{{
		Name:  "r",
		Match: Match{Path: &StringMatch{Type: MatchRegex, Value: "[a-z]{50}"}},
		Retry: &Retry{Attempts: 3},
	}}}
	tests := []struct {
		name string
		lim  *Limits
		want string
	}{
		{name: "defaults", lim: nil},
		{name: "regex over the limit", lim: &Limits{MaxRegexInstructions: 20}, want: "regex program"},
		{name: "retries over the limit", lim: &Limits{MaxRetryAttempts: 2}, want: "retry attempts 3 above the limit 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateHost("http-80", &vh, tt.lim)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("ValidateHost() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("ValidateHost() = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestRegexInstructions(t *testing.T) {
	// The header regex: 4,082 characters of bounded repetitions, half a million
	// instructions once expanded.
	var huge strings.Builder
	for huge.Len() < 4082-len("[a-z0-9]{1,999}") {
		huge.WriteString("[a-z0-9]{1,999}")
	}
	for _, tc := range []struct {
		expr     string
		limit    int
		min, max int
	}{
		{"abc", DefaultMaxRegexInstructions, 3, 8},
		{"/" + strings.Repeat("(abc|def)", 130), DefaultMaxRegexInstructions, 1100, 1200},
		// Exact up to 4 times the limit; above, the estimate, which is never below the exact count.
		{"[a-z]{800}[0-9]{800}", 10_000, 1600, 1610},
		{"[a-z]{800}[0-9]{800}", 100, 1600, 5000},
		{huge.String(), DefaultMaxRegexInstructions, 4 * DefaultMaxRegexInstructions, 1 << 30},
	} {
		start := time.Now()
		n, _, err := RegexInstructions(tc.expr, tc.limit, tc.limit)
		if err != nil || n < tc.min || n > tc.max {
			t.Errorf("RegexInstructions(%.30q, %d) = %d, %v; want %d..%d", tc.expr, tc.limit, n, err, tc.min, tc.max)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("RegexInstructions(%.30q, %d) took %s", tc.expr, tc.limit, d)
		}
	}
	if _, _, err := RegexInstructions("(", DefaultMaxRegexInstructions, 0); err == nil {
		t.Error("RegexInstructions(\"(\") = nil error")
	}
}

// TestValidateSharedRoutes checks that hosts sharing one routes slice are reported as if each had
// its own copy: every error of every host, in the same words and order.
func TestValidateSharedRoutes(t *testing.T) {
	be := []Backend{{Name: "b", Weight: 1, Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 80}}}}
	valid := []Route{{Name: "ok", Match: Match{Path: &StringMatch{Type: MatchPrefix, Value: "/"}}, Backends: be}}
	invalid := []Route{{Name: "bad", Match: Match{Path: &StringMatch{Type: "Bogus", Value: "/"}}, Backends: be}}
	hosts := []VirtualHost{
		{Hostname: "a.example.com", Routes: valid},
		{Hostname: "b.example.com", Routes: valid},
		{Hostname: "c.example.com", Routes: invalid},
		{Hostname: "d.example.com", Routes: invalid},
		{Hostname: "e.example.com", Routes: valid, SingleLabelWildcard: true},
		{Hostname: "f.example.com", Routes: valid},
		{Hostname: "a.example.com", Routes: valid},
		// Routes of their own that repeat the ones at their places before, as decoders give them.
		{Hostname: "g.example.com", Routes: []Route{valid[0], invalid[0]}},
		{Hostname: "h.example.com", Routes: []Route{valid[0], invalid[0]}},
		{Hostname: "i.example.com", Routes: []Route{invalid[0], valid[0]}},
		{Hostname: "j.example.com", Routes: []Route{invalid[0], valid[0]}},
	}
	config := func(hosts []VirtualHost) *Config {
		return &Config{Gateway: "ns/gw", Listeners: []Listener{{Name: "http", Port: 80, Protocol: ProtocolHTTP, VirtualHosts: hosts}}}
	}
	// Each host's routes its own, nothing shared in memory.
	var own []VirtualHost
	raw, err := json.Marshal(hosts)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &own); err != nil {
		t.Fatal(err)
	}
	shared, copied := config(hosts).Validate(), config(own).Validate()
	if shared == nil || copied == nil {
		t.Fatalf("errors: shared %v, own routes %v", shared, copied)
	}
	if shared.Error() != copied.Error() {
		t.Errorf("shared routes:\n%v\nown routes:\n%v", shared, copied)
	}
	for _, want := range []string{`host "c.example.com" route "bad" path: match type "Bogus"`, `host "d.example.com" route "bad"`,
		`host "g.example.com" route "bad"`, `host "h.example.com" route "bad"`, `host "i.example.com" route "bad"`, `host "j.example.com" route "bad"`,
		`host "e.example.com": singleLabelWildcard`, `host "a.example.com": duplicate host`} {
		if !strings.Contains(shared.Error(), want) {
			t.Errorf("error %q does not say %q", shared, want)
		}
	}
}

// TestValidateButHosts: ValidateButHosts reports every error Validate reports but those of the
// virtual hosts, and a HostValidator finds a host valid exactly when ValidateHost does, as Validate
// would (duplicates apart), the hosts whose routes are the slice of the host before included.
func TestValidateButHosts(t *testing.T) {
	host := func(name string, path *StringMatch) VirtualHost {
		return VirtualHost{Hostname: name, Routes: []Route{{Name: "r", Match: Match{Path: path},
			Backends: []Backend{{Name: "b", Weight: 1, Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 80}}}}}}}
	}
	bad := &StringMatch{Type: MatchRegex, Value: "("}
	sharing := func(vh VirtualHost, name string, singleLabel bool) VirtualHost {
		vh.Hostname, vh.SingleLabelWildcard = name, singleLabel
		return vh
	}
	good, wrong := host("g.example.com", nil), host("w.example.com", bad)
	tests := []struct {
		name       string
		hosts      []VirtualHost
		valid      []bool // by host
		duplicates int    // Validate's duplicate-host errors
	}{
		{name: "valid", hosts: []VirtualHost{host("a.example.com", nil), host("b.example.com", nil)}, valid: []bool{true, true}},
		{name: "duplicates only", hosts: []VirtualHost{host("a.example.com", nil), host("A.example.com.", nil), host("", nil), host("*", nil)},
			valid: []bool{true, true, true, true}, duplicates: 2},
		{name: "duplicates and bad routes", hosts: []VirtualHost{host("a.example.com", bad), host("b.example.com", nil), host("a.example.com", nil), host("b.example.com", bad)},
			valid: []bool{false, true, true, false}, duplicates: 2},
		{name: "routes shared with the host before", hosts: []VirtualHost{good, sharing(good, "*.a.example", true), sharing(good, "b.example", true),
			sharing(good, "c.example", false), wrong, sharing(wrong, "x.example", false)},
			valid: []bool{true, true, false, true, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Config{Gateway: "ns/gw", Listeners: []Listener{{Name: "http", Port: 80, Protocol: ProtocolHTTP, VirtualHosts: tt.hosts},
				{Name: "tls", Port: 443, Protocol: ProtocolTLS, VirtualHosts: tt.hosts[:1]}}}
			var want []string
			duplicates := 0
			if err := c.Validate(); err != nil {
				for line := range strings.SplitSeq(err.Error(), "\n") {
					switch {
					case strings.HasSuffix(line, ": duplicate host"):
						duplicates++
					case !strings.HasPrefix(line, `listener "http" host `):
						want = append(want, line)
					}
				}
			}
			if duplicates != tt.duplicates {
				t.Fatalf("Validate reports %d duplicate hosts, want %d", duplicates, tt.duplicates)
			}
			var got []string
			if err := c.ValidateButHosts(); err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("errors (-Validate's but the hosts' +got):\n%s", diff)
			}
			hv := c.HostValidator()
			var valid, alone []bool
			for i := range tt.hosts {
				valid = append(valid, hv.Valid(&tt.hosts[i]))
				alone = append(alone, ValidateHost("http", &tt.hosts[i], c.Limits) == nil)
			}
			if diff := cmp.Diff(tt.valid, valid); diff != "" {
				t.Errorf("HostValidator.Valid by host (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.valid, alone); diff != "" {
				t.Errorf("ValidateHost == nil by host (-want +got):\n%s", diff)
			}
		})
	}
}
