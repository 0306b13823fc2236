package proxy

import (
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// headerMod is an ir.HeaderModifier with canonical keys and value slices built once per config.
type headerMod struct {
	set    []headerKV
	add    []headerKV
	remove []string
	// host is the value of a "Host" set, which lives in Request.Host rather than in the header map.
	host string
}

type headerKV struct {
	key string
	// vals is a one-element slice with capacity one: sharing it across requests is safe because
	// appending to it always copies.
	vals []string
}

func compileHeaderMod(m *ir.HeaderModifier) *headerMod {
	if m == nil || len(m.Set)+len(m.Add)+len(m.Remove) == 0 {
		return nil
	}
	out := &headerMod{}
	kv := func(h ir.Header) headerKV {
		return headerKV{key: textproto.CanonicalMIMEHeaderKey(h.Name), vals: []string{h.Value}[:1:1]}
	}
	for _, h := range m.Set {
		if strings.EqualFold(h.Name, "host") {
			out.host = h.Value
			continue
		}
		out.set = append(out.set, kv(h))
	}
	for _, h := range m.Add {
		out.add = append(out.add, kv(h))
	}
	for _, name := range m.Remove {
		out.remove = append(out.remove, textproto.CanonicalMIMEHeaderKey(name))
	}
	return out
}

func (m *headerMod) apply(h http.Header) {
	if m == nil {
		return
	}
	for _, kv := range m.set {
		h[kv.key] = kv.vals
	}
	for _, kv := range m.add {
		h[kv.key] = append(h[kv.key], kv.vals[0])
	}
	for _, k := range m.remove {
		delete(h, k)
	}
}

func (m *headerMod) applyRequest(r *http.Request) {
	if m == nil {
		return
	}
	m.apply(r.Header)
	if m.host != "" {
		r.Host = m.host
	}
}

// replacePrefix swaps the matched prefix for repl at a segment boundary without doubling slashes:
// rest is what followed the prefix ("" or "/...").
func replacePrefix(repl, rest string) string {
	var p string
	if strings.HasSuffix(repl, "/") && strings.HasPrefix(rest, "/") {
		p = repl + rest[1:]
	} else {
		p = repl + rest
	}
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	return p
}

type pathMod struct {
	prefix bool
	value  string
}

func compilePathMod(p *ir.PathModifier) *pathMod {
	if p == nil {
		return nil
	}
	return &pathMod{prefix: p.Type == ir.ReplacePrefixMatch, value: p.Value}
}

// newPath returns the modified path, or ok=false when the path is unchanged.
func (m *pathMod) newPath(r *route, path string) (string, bool) {
	if m == nil {
		return "", false
	}
	if m.prefix {
		return replacePrefix(m.value, r.prefixRest(path)), true
	}
	return m.value, true
}

type rewrite struct {
	host string
	path *pathMod
}

func (rw *rewrite) apply(rt *route, r *http.Request) {
	if rw.host != "" {
		r.Host = rw.host
	}
	if p, ok := rw.path.newPath(rt, r.URL.Path); ok {
		r.URL.Path, r.URL.RawPath = p, ""
	}
}

type redirect struct {
	scheme string
	host   string
	port   uint32
	path   *pathMod
	code   int
}

func defaultPort(scheme string) uint32 {
	switch scheme {
	case "http":
		return 80
	case "https":
		return 443
	}
	return 0
}

// location builds the redirect target per Gateway API: unset parts keep the request's values, an
// unset port is the new scheme's well-known port if the scheme changes, else the listener's port,
// and a port equal to the scheme's default is omitted.
func (rd *redirect) location(rt *route, r *http.Request, listenerPort uint32) string {
	scheme := rd.scheme
	if scheme == "" {
		scheme = "http"
		if r.TLS != nil {
			scheme = "https"
		}
	}
	host := rd.host
	if host == "" {
		host = hostOnly(r.Host)
	}
	port := rd.port
	if port == 0 {
		if rd.scheme != "" {
			port = defaultPort(scheme)
		} else {
			port = listenerPort
		}
	}
	if strings.IndexByte(host, ':') >= 0 && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	if port != 0 && port != defaultPort(scheme) {
		host += ":" + strconv.FormatUint(uint64(port), 10)
	}
	u := url.URL{Scheme: scheme, Host: host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	if p, ok := rd.path.newPath(rt, r.URL.Path); ok {
		u.Path, u.RawPath = p, ""
	}
	return u.String()
}

// hostOnly strips a port, keeping the host's case.
func hostOnly(h string) string {
	if strings.HasPrefix(h, "[") {
		if j := strings.IndexByte(h, ']'); j >= 0 {
			return h[1:j]
		}
		return h
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h, ':') == i {
		return h[:i]
	}
	return h
}

// cors implements the CORS filter: preflights are answered by the proxy, other cross-origin responses
// get the allow headers (overriding the backend's).
type cors struct {
	anyOrigin   bool
	origins     map[string]bool
	wildOrigins [][2]string // prefix, suffix around one "*"
	credentials bool
	methods     string
	anyMethod   bool
	headers     string
	anyHeader   bool
	expose      string
	maxAge      string
}

func compileCORS(c *ir.CORS) *cors {
	if c == nil {
		return nil
	}
	out := &cors{origins: map[string]bool{}, credentials: c.AllowCredentials}
	for _, o := range c.AllowOrigins {
		switch i := strings.IndexByte(o, '*'); {
		case o == "*":
			out.anyOrigin = true
		case i >= 0:
			out.wildOrigins = append(out.wildOrigins, [2]string{strings.ToLower(o[:i]), strings.ToLower(o[i+1:])})
		default:
			out.origins[strings.ToLower(o)] = true
		}
	}
	for _, m := range c.AllowMethods {
		out.anyMethod = out.anyMethod || m == "*"
	}
	for _, h := range c.AllowHeaders {
		out.anyHeader = out.anyHeader || h == "*"
	}
	out.methods = strings.Join(c.AllowMethods, ", ")
	out.headers = strings.Join(c.AllowHeaders, ", ")
	out.expose = strings.Join(c.ExposeHeaders, ", ")
	if c.MaxAge > 0 {
		out.maxAge = strconv.Itoa(int(c.MaxAge))
	}
	return out
}

func (c *cors) allowed(origin string) bool {
	if c.anyOrigin {
		return true
	}
	o := strings.ToLower(origin)
	if c.origins[o] {
		return true
	}
	for _, w := range c.wildOrigins {
		if len(o) > len(w[0])+len(w[1]) && strings.HasPrefix(o, w[0]) && strings.HasSuffix(o, w[1]) {
			return true
		}
	}
	return false
}

// preflight answers a CORS preflight (403 for an origin not allowed) and reports whether it did.
func (c *cors) preflight(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	reqMethod := r.Header.Get("Access-Control-Request-Method")
	if r.Method != http.MethodOptions || origin == "" || reqMethod == "" {
		return false
	}
	if !c.allowed(origin) {
		// A preflight is the gateway's to answer: a refused origin gets no CORS headers and the
		// backend never sees it (conformance HTTPRouteCORS).
		w.WriteHeader(http.StatusForbidden)
		return true
	}
	h := w.Header()
	c.setOrigin(h, origin)
	switch {
	case c.anyMethod && c.credentials:
		h.Set("Access-Control-Allow-Methods", reqMethod)
	case c.anyMethod:
		h.Set("Access-Control-Allow-Methods", "*")
	case c.methods != "":
		h.Set("Access-Control-Allow-Methods", c.methods)
	}
	reqHeaders := r.Header.Get("Access-Control-Request-Headers")
	switch {
	case c.anyHeader && c.credentials:
		if reqHeaders != "" {
			h.Set("Access-Control-Allow-Headers", reqHeaders)
		}
	case c.anyHeader:
		h.Set("Access-Control-Allow-Headers", "*")
	case c.headers != "":
		h.Set("Access-Control-Allow-Headers", c.headers)
	}
	if c.maxAge != "" {
		h.Set("Access-Control-Max-Age", c.maxAge)
	}
	// Sent on preflights too, as Envoy does and conformance HTTPRouteCORS expects.
	if c.expose != "" {
		h.Set("Access-Control-Expose-Headers", c.expose)
	}
	w.WriteHeader(http.StatusOK)
	return true
}

// decorate adds the CORS response headers for an allowed origin.
func (c *cors) decorate(h http.Header, origin string) {
	if origin == "" || !c.allowed(origin) {
		return
	}
	c.setOrigin(h, origin)
	if c.expose != "" {
		h.Set("Access-Control-Expose-Headers", c.expose)
	}
}

func (c *cors) setOrigin(h http.Header, origin string) {
	if c.anyOrigin && !c.credentials {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
	}
	if c.credentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
}
