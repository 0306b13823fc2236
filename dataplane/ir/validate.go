package ir

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp/syntax"
	"strings"
)

// bounds are the limits Validate enforces on route authors' values, from Config.Limits or defaults.
type bounds struct {
	maxRetryAttempts     int
	maxRegexInstructions int
}

func boundsOf(l *Limits) bounds {
	b := bounds{maxRetryAttempts: DefaultMaxRetryAttempts, maxRegexInstructions: DefaultMaxRegexInstructions}
	if l != nil && l.MaxRetryAttempts != 0 {
		b.maxRetryAttempts = l.MaxRetryAttempts
	}
	if l != nil && l.MaxRegexInstructions != 0 {
		b.maxRegexInstructions = l.MaxRegexInstructions
	}
	return b
}

// Validate reports every structural error in the config, so that a proxy can refuse (NACK) a config
// it could not serve correctly instead of serving part of it.
func (c *Config) Validate() error { return c.validate(true) }

// ValidateButHosts reports what Validate reports but the errors of the listeners' virtual hosts:
// those HostValidator finds in a host, and a host given twice in a listener. It is for a caller
// that walks every host anyway, checks each as it takes it, puts it in a map by HostnameKey (where
// a duplicate shows), and calls Validate for the whole answer when a host fails: a walk of its own
// over 100k hosts, and a map of their names, were ~15% of a table swap.
func (c *Config) ValidateButHosts() error { return c.validate(false) }

// HostValidator returns what checks the virtual hosts of c one at a time.
func (c *Config) HostValidator() *HostValidator { return &HostValidator{b: boundsOf(c.Limits)} }

// HostValidator checks virtual hosts, one at a time, as Validate checks those of a config.
type HostValidator struct {
	b bounds
	// valid are the routes of a host before that had no errors: a host that shares them
	// (the same slice, as decoders and the controller share equal routes) has none either,
	// their checks being a function of them and b alone.
	valid []Route
}

// Valid tells whether Validate finds no error in vh, duplicates apart.
func (hv *HostValidator) Valid(vh *VirtualHost) bool { return len(hv.errors(vh)) == 0 }

// errors returns the errors of vh, each starting with " host ..." for the caller to prefix with
// the listener.
func (hv *HostValidator) errors(vh *VirtualHost) []error {
	if len(vh.Routes) > 0 && len(vh.Routes) == len(hv.valid) && &vh.Routes[0] == &hv.valid[0] {
		if err := vh.validateHost(); err != nil {
			return []error{err}
		}
		return nil
	}
	errs := vh.validate(hv.b)
	if hv.valid = nil; len(errs) == 0 {
		hv.valid = vh.Routes
	}
	return errs
}

func (c *Config) validate(hosts bool) error {
	var errs []error
	names := map[string]bool{}
	type portKey struct {
		port uint32
		udp  bool
	}
	ports := map[portKey]string{}
	b := boundsOf(c.Limits)
	if l := c.Limits; l != nil {
		errs = append(errs, l.validateServerHeader()...)
	}
	for i := range c.Listeners {
		l := &c.Listeners[i]
		at := fmt.Sprintf("listener %q", l.Name)
		if l.Name == "" {
			errs = append(errs, fmt.Errorf("listener %d: empty name", i))
		}
		if names[l.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate name", at))
		}
		names[l.Name] = true
		if l.Port == 0 || l.Port > 65535 {
			errs = append(errs, fmt.Errorf("%s: port %d out of range", at, l.Port))
		}
		key := portKey{l.Port, l.Protocol == ProtocolUDP}
		if other, ok := ports[key]; ok {
			errs = append(errs, fmt.Errorf("%s: port %d already used by listener %q", at, l.Port, other))
		}
		ports[key] = l.Name
		errs = append(errs, l.validate(at, b, hosts)...)
	}
	return errors.Join(errs...)
}

// validate returns the listener's errors, those of its virtual hosts only when hosts is set.
func (l *Listener) validate(at string, b bounds, hosts bool) []error {
	var errs []error
	switch l.Protocol {
	case ProtocolHTTP, ProtocolHTTPS:
		if len(l.SNIRoutes) > 0 || l.L4 != nil {
			errs = append(errs, fmt.Errorf("%s: %s listener holds L4 routes", at, l.Protocol))
		}
		if l.Protocol == ProtocolHTTPS && len(l.Certificates) == 0 {
			errs = append(errs, fmt.Errorf("%s: HTTPS listener without certificates", at))
		}
		if cv := l.ClientValidation; cv != nil {
			if l.Protocol != ProtocolHTTPS {
				errs = append(errs, fmt.Errorf("%s: client certificate validation on a %s listener", at, l.Protocol))
			}
			if len(cv.CACertPEM) == 0 {
				errs = append(errs, fmt.Errorf("%s: client certificate validation without CA certificates", at))
			}
		}
		if !hosts {
			break
		}
		// Hosts are keyed by name: a proxy patches them one at a time (Update).
		names := make(map[string]bool, len(l.VirtualHosts))
		hv := HostValidator{b: b}
		for i := range l.VirtualHosts {
			vh := &l.VirtualHosts[i]
			if k := HostnameKey(vh.Hostname); names[k] {
				errs = append(errs, fmt.Errorf("%s host %q: duplicate host", at, vh.Hostname))
			} else {
				names[k] = true
			}
			for _, err := range hv.errors(vh) {
				errs = append(errs, fmt.Errorf("%s%w", at, err))
			}
		}
	case ProtocolTLS:
		if len(l.VirtualHosts) > 0 || l.L4 != nil {
			errs = append(errs, fmt.Errorf("%s: TLS listener holds HTTP or plain L4 routes", at))
		}
		for _, r := range l.SNIRoutes {
			if r.Terminate && len(l.Certificates) == 0 {
				errs = append(errs, fmt.Errorf("%s route %q: terminating TLS without certificates", at, r.Name))
			}
			errs = append(errs, validateBackends(fmt.Sprintf("%s route %q", at, r.Name), r.Backends)...)
		}
	case ProtocolTCP, ProtocolUDP:
		if len(l.VirtualHosts) > 0 || len(l.SNIRoutes) > 0 {
			errs = append(errs, fmt.Errorf("%s: %s listener holds HTTP or SNI routes", at, l.Protocol))
		}
		if l.L4 != nil {
			errs = append(errs, validateBackends(fmt.Sprintf("%s route %q", at, l.L4.Name), l.L4.Backends)...)
		}
	default:
		errs = append(errs, fmt.Errorf("%s: unknown protocol %q", at, l.Protocol))
	}
	for _, sr := range l.SourceRanges {
		if _, err := netip.ParsePrefix(sr); err != nil {
			errs = append(errs, fmt.Errorf("%s source range: %w", at, err))
		}
	}
	for _, cert := range l.Certificates {
		if len(cert.CertPEM) == 0 || len(cert.KeyPEM) == 0 {
			errs = append(errs, fmt.Errorf("%s certificate %q: empty certificate or key", at, cert.Name))
		}
	}
	return errs
}

// ValidateHost reports the errors of one virtual host of listener l, as Validate would report
// them within a config; duplicates, and whether l may hold virtual hosts at all, are the caller's
// to check. lim are the limits of the config the host belongs to.
func ValidateHost(l string, vh *VirtualHost, lim *Limits) error {
	errs := vh.validate(boundsOf(lim))
	if len(errs) == 0 {
		return nil
	}
	at := fmt.Sprintf("listener %q", l)
	for i, err := range errs {
		errs[i] = fmt.Errorf("%s%w", at, err)
	}
	return errors.Join(errs...)
}

// validate returns the host's errors, each starting with " host ..." for the caller to prefix
// with the listener.
func (vh *VirtualHost) validate(b bounds) []error {
	var errs []error
	if err := vh.validateHost(); err != nil {
		errs = append(errs, err)
	}
	for i := range vh.Routes {
		r := &vh.Routes[i]
		// The place is formatted only for a route with errors: 100k routes cost no Sprintf.
		for _, err := range r.validate(b) {
			errs = append(errs, fmt.Errorf(" host %q route %q%w", vh.Hostname, r.Name, err))
		}
	}
	return errs
}

// validateHost returns the error of the host's own fields, apart from its routes.
func (vh *VirtualHost) validateHost() error {
	if vh.SingleLabelWildcard && !strings.HasPrefix(vh.Hostname, "*.") {
		return fmt.Errorf(" host %q: singleLabelWildcard on a host that is not a wildcard", vh.Hostname)
	}
	return nil
}

// validate returns the route's errors, each starting where in the route it lies (" path: ...")
// for the caller to prefix with the route's place.
func (r *Route) validate(b bounds) []error {
	const at = ""
	var errs []error
	prefixMatch := false
	if p := r.Match.Path; p != nil {
		errs = append(errs, validateString(at+" path", p.Type, p.Value, b, MatchExact, MatchPrefix, MatchRegex)...)
		prefixMatch = p.Type == MatchPrefix
	}
	for _, h := range r.Match.Headers {
		if !ValidHeaderName(h.Name) {
			errs = append(errs, fmt.Errorf(" header %q: not a valid header name", h.Name))
		}
		for _, err := range validateString("", h.Type, h.Value, b, MatchExact, MatchRegex) {
			errs = append(errs, fmt.Errorf(" header %q%w", h.Name, err))
		}
	}
	for _, q := range r.Match.QueryParams {
		for _, err := range validateString("", q.Type, q.Value, b, MatchExact, MatchRegex) {
			errs = append(errs, fmt.Errorf(" query %q%w", q.Name, err))
		}
	}
	if rd := r.Filters.Redirect; rd != nil {
		switch rd.StatusCode {
		case 301, 302, 303, 307, 308:
		default:
			errs = append(errs, fmt.Errorf("%s: redirect status %d", at, rd.StatusCode))
		}
		errs = append(errs, validatePathModifier(at+" redirect", rd.Path, prefixMatch)...)
	}
	if rw := r.Filters.Rewrite; rw != nil {
		errs = append(errs, validatePathModifier(at+" rewrite", rw.Path, prefixMatch)...)
	}
	for _, m := range r.Filters.Mirrors {
		if m.Numerator < 0 || m.Denominator < 0 || (m.Denominator > 0 && m.Numerator > m.Denominator) {
			errs = append(errs, fmt.Errorf("%s mirror %q: bad fraction %d/%d", at, m.Backend.Name, m.Numerator, m.Denominator))
		}
	}
	if rd := r.Filters.Redirect; rd != nil && !validHostValue(rd.Hostname) {
		errs = append(errs, fmt.Errorf("%s redirect: hostname %q holds spaces or control characters", at, rd.Hostname))
	}
	if rw := r.Filters.Rewrite; rw != nil && !validHostValue(rw.Hostname) {
		errs = append(errs, fmt.Errorf("%s rewrite: hostname %q holds spaces or control characters", at, rw.Hostname))
	}
	if c := r.Filters.CORS; c != nil {
		errs = append(errs, validateCORS(at+" cors", c)...)
	}
	errs = append(errs, validateHeaderModifier(at+" request headers", r.Filters.RequestHeaders)...)
	errs = append(errs, validateHeaderModifier(at+" response headers", r.Filters.ResponseHeaders)...)
	if r.Retry != nil && r.Retry.Attempts < 0 {
		errs = append(errs, fmt.Errorf("%s: negative retry attempts", at))
	}
	if r.Retry != nil && r.Retry.Attempts > b.maxRetryAttempts {
		errs = append(errs, fmt.Errorf("%s: retry attempts %d above the limit %d", at, r.Retry.Attempts, b.maxRetryAttempts))
	}
	return append(errs, validateBackends(at, r.Backends)...)
}

func validateString(at string, t MatchType, value string, b bounds, allowed ...MatchType) []error {
	for _, a := range allowed {
		if t != a {
			continue
		}
		if t == MatchRegex {
			// Only the program size is checked here: the proxy compiles the regex itself, once.
			n, est, err := RegexInstructions(value, b.maxRegexInstructions, b.maxRegexInstructions)
			if err != nil {
				return []error{fmt.Errorf("%s: %w", at, err)}
			}
			if RegexTooLarge(n, est, b.maxRegexInstructions) {
				return []error{fmt.Errorf("%s: regex program of %d instructions above the limit %d", at, n, b.maxRegexInstructions)}
			}
		}
		return nil
	}
	return []error{fmt.Errorf("%s: match type %q not allowed", at, t)}
}

func validatePathModifier(at string, p *PathModifier, prefixMatch bool) []error {
	if p == nil {
		return nil
	}
	switch p.Type {
	case ReplaceFullPath:
		return nil
	case ReplacePrefixMatch:
		if !prefixMatch {
			return []error{fmt.Errorf("%s: ReplacePrefixMatch needs a Prefix path match", at)}
		}
		return nil
	}
	return []error{fmt.Errorf("%s: path modifier %q unknown", at, p.Type)}
}

func validateBackends(at string, backends []Backend) []error {
	var errs []error
	for i := range backends {
		b := &backends[i]
		// The place is formatted only for a backend with filters: 300k backends cost no Sprintf.
		if m := b.Filters.RequestHeaders; m != nil {
			errs = append(errs, validateHeaderModifier(fmt.Sprintf("%s backend %q request headers", at, b.Name), m)...)
		}
		if m := b.Filters.ResponseHeaders; m != nil {
			errs = append(errs, validateHeaderModifier(fmt.Sprintf("%s backend %q response headers", at, b.Name), m)...)
		}
		if b.Invalid {
			continue
		}
		if t := b.TLS; t != nil {
			if b.AppProtocol != AppTLS {
				errs = append(errs, fmt.Errorf("%s backend %q: TLS verification on a backend not spoken to with TLS", at, b.Name))
			}
			if t.Hostname == "" {
				errs = append(errs, fmt.Errorf("%s backend %q: TLS verification without a hostname", at, b.Name))
			}
			for _, san := range t.SubjectAltNames {
				if (san.Type != SANHostname && san.Type != SANURI) || san.Value == "" {
					errs = append(errs, fmt.Errorf("%s backend %q: bad subject alternative name %s %q", at, b.Name, san.Type, san.Value))
				}
			}
		}
		for j := range b.Endpoints {
			e := &b.Endpoints[j]
			if e.Address == "" || e.Port == 0 || e.Port > 65535 {
				errs = append(errs, fmt.Errorf("%s backend %q: bad endpoint %q:%d", at, b.Name, e.Address, e.Port))
			}
			if !ValidPlacement(e.Zone, e.Node) {
				errs = append(errs, fmt.Errorf("%s backend %q: endpoint %q: bad zone %q or node %q", at, b.Name, e.Address, e.Zone, e.Node))
			}
		}
	}
	return errs
}

// ValidPlacement tells whether an endpoint's zone and node are empty or names a cloud API can be
// given as they are: a zone a DNS label of at most 63 characters, a node a DNS subdomain.
func ValidPlacement(zone, node string) bool {
	return dnsName(zone, 63, false) && dnsName(node, 253, true)
}

func dnsName(s string, max int, dots bool) bool {
	if len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', dots && c == '.':
		default:
			return false
		}
	}
	return true
}

// RegexInstructions parses a regex as Go's regexp does and returns the size of its compiled
// program (regexp/syntax instructions, after Simplify): what a match costs per input byte and
// what the compiled regexp holds in memory. est is an upper bound from the parse tree, worked out
// only as far as it matters (above 4*max(limit, estLimit) it stops growing). A regex whose est is
// above 4*limit is not compiled at all (expanding [a-z]{1,999} hundreds of times costs seconds and
// hundreds of MB): insts is est then. So insts is never below the exact count, and
// RegexTooLarge(insts, est, l) is Validate's verdict for every l ≤ estLimit.
func RegexInstructions(expr string, limit, estLimit int) (insts, est int, err error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0, 0, err // syntax errors say "error parsing regexp" themselves
	}
	// +2: the program's fail and match instructions.
	if est = estimateInsts(re, 4*max(limit, estLimit)) + 2; est > 4*limit {
		return est, est, nil
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, 0, err
	}
	return len(prog.Inst), est, nil
}

// RegexTooLarge says whether a regex measured by RegexInstructions (with any limit) is above
// limit. Measured with a larger limit it may refuse a regex Validate would accept, never the
// reverse: translation measures once and judges for every class.
func RegexTooLarge(insts, est, limit int) bool { return est > 4*limit || insts > limit }

// estimateInsts bounds from above the program size of re (within a small factor), stopping once
// above stop (a value above stop is then below the full estimate): a repeat counts its maximum (or minimum+1) copies of its operand, each with room for
// the instructions that join them.
func estimateInsts(re *syntax.Regexp, stop int) int {
	sub := func() int {
		n := 0
		for _, s := range re.Sub {
			n += estimateInsts(s, stop) + 1
			if n > stop {
				return n
			}
		}
		return n
	}
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune) + 1
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpConcat, syntax.OpAlternate:
		return sub() + 2
	case syntax.OpRepeat:
		n := max(re.Max, re.Min+1)
		return min(n, stop+1) * (sub() + 2)
	}
	return 2
}

// ValidHeaderName reports whether s is an RFC 9110 field name (a token).
func ValidHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func (l *Limits) validateServerHeader() []error {
	var errs []error
	switch l.ServerHeader {
	case "", ServerHeaderSet, ServerHeaderPassThrough, ServerHeaderStrip:
	default:
		errs = append(errs, fmt.Errorf("limits: unknown server header mode %q", l.ServerHeader))
	}
	if !ValidHeaderValue(l.ServerHeaderValue) {
		errs = append(errs, fmt.Errorf("limits: server header value %q is not a valid header value", l.ServerHeaderValue))
	}
	return errs
}

// ValidHeaderValue reports whether s is an RFC 9110 field value: visible characters, obs-text,
// spaces and tabs. CR, LF and NUL would split or end the header; the other control characters
// are refused too, because net/http (the HTTPS, HTTP/2 and gRPC paths) refuses to send them, so a
// value holding one would fail every request of the route with a 502.
func ValidHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// ReservedHeader reports whether a header modifier may not name h: the proxy frames messages
// itself (RFC 9112), so framing and hop-by-hop headers are its own, and Host changes only through
// the URL rewrite hostname.
func ReservedHeader(h string) bool {
	switch strings.ToLower(h) {
	case "content-length", "transfer-encoding", "connection", "keep-alive", "te", "upgrade", "trailer",
		"proxy-connection", "host":
		return true
	}
	return false
}

// HeaderProblem says what is wrong with one header of a modifier ("" when nothing): a name that
// is not a token, a reserved name, or a value with control characters.
func HeaderProblem(name, value string) string {
	switch {
	case !ValidHeaderName(name):
		return fmt.Sprintf("header name %q is not an RFC 9110 token", name)
	case ReservedHeader(name):
		return fmt.Sprintf("header %q is managed by the proxy and cannot be modified", name)
	case !ValidHeaderValue(value):
		return fmt.Sprintf("value of header %q holds CR, LF, NUL or another control character", name)
	}
	return ""
}

// validHostValue reports whether a hostname can go into a Host or Location header as is.
func validHostValue(h string) bool {
	return ValidHeaderValue(h) && !strings.ContainsAny(h, " \t")
}

// validateCORS checks the CORS values the proxy writes into response headers: names and methods
// are tokens, origins field values.
func validateCORS(at string, c *CORS) []error {
	var errs []error
	for _, list := range [][]string{c.AllowHeaders, c.ExposeHeaders, c.AllowMethods} {
		for _, h := range list {
			if !ValidHeaderName(h) && h != "*" {
				errs = append(errs, fmt.Errorf("%s: %q is not an RFC 9110 token", at, h))
			}
		}
	}
	for _, o := range c.AllowOrigins {
		if !validHostValue(o) {
			errs = append(errs, fmt.Errorf("%s: origin %q holds spaces or control characters", at, o))
		}
	}
	return errs
}

func validateHeaderModifier(at string, m *HeaderModifier) []error {
	if m == nil {
		return nil
	}
	var errs []error
	for _, h := range m.Set {
		if p := HeaderProblem(h.Name, h.Value); p != "" {
			errs = append(errs, fmt.Errorf("%s set: %s", at, p))
		}
	}
	for _, h := range m.Add {
		if p := HeaderProblem(h.Name, h.Value); p != "" {
			errs = append(errs, fmt.Errorf("%s add: %s", at, p))
		}
	}
	for _, h := range m.Remove {
		if p := HeaderProblem(h, ""); p != "" {
			errs = append(errs, fmt.Errorf("%s remove: %s", at, p))
		}
	}
	return errs
}
