// Package clouddnsfake is an in-memory fake of the Cloud DNS v1 REST API: the part that
// external-dns's google provider calls (managedZones.list, resourceRecordSets.list,
// changes.create, changes.get), so that the real google.golang.org/api/dns/v1 client talks to it
// unchanged. Proxy serves it at https://dns.<universe domain>/ for a client that cannot be given
// an endpoint. What each behaviour rests on is in README.md.
package clouddnsfake

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	dnsv1 "google.golang.org/api/dns/v1"
)

// Limits of one change (Cloud DNS quotas and limits: "Additions per change 1,000", "Deletions
// per change 1,000", "Resource record data size per change 100,000 bytes").
const (
	MaxAdditionsPerChange = 1000
	MaxDeletionsPerChange = 1000
	MaxRrdataBytes        = 100000
)

// DefaultPageSize is how many items a list returns when the call sets no maxResults (the
// reference leaves it to the server).
const DefaultPageSize = 100

// TokenVerifier checks a bearer token: gcpfake.Server issues them from its token endpoint.
type TokenVerifier interface {
	VerifyToken(tok string) (email string, ok bool)
}

// Call is one request the fake answered.
type Call struct {
	Method, Host, Path string
	Status             int
}

// Server is the fake. Its zero value is not usable: call New.
type Server struct {
	mu       sync.Mutex
	projects map[string]*project
	seq      uint64
	pageSize int
	auth     TokenVerifier
	calls    []Call
}

type project struct {
	zones map[string]*zone // by name
}

type zone struct {
	mz      dnsv1.ManagedZone
	rrsets  map[rrKey]*dnsv1.ResourceRecordSet
	changes map[string]*dnsv1.Change
}

type rrKey struct{ name, typ string }

func (k rrKey) String() string { return k.name + " (" + k.typ + ")" }

// New makes an empty fake: no projects, no zones, no auth.
func New() *Server {
	return &Server{projects: map[string]*project{}, pageSize: DefaultPageSize}
}

// RequireAuth makes every call need a bearer token that v accepts (401 otherwise).
func (s *Server) RequireAuth(v TokenVerifier) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth = v
}

// SetPageSize sets how many items a list returns when the call sets no maxResults.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = n
}

// AddZone creates a managed zone with its SOA and NS record sets, as managedZones.create does.
// visibility is "public" or "private".
func (s *Server) AddZone(projectID, name, dnsName, visibility string) (*dnsv1.ManagedZone, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !strings.HasSuffix(dnsName, ".") {
		return nil, fmt.Errorf("zone %s: dnsName %q must end with a dot", name, dnsName)
	}
	p := s.projects[projectID]
	if p == nil {
		p = &project{zones: map[string]*zone{}}
		s.projects[projectID] = p
	}
	if _, ok := p.zones[name]; ok {
		return nil, fmt.Errorf("zone %s already exists in project %s", name, projectID)
	}
	s.seq++
	dnsName = strings.ToLower(dnsName)
	ns := []string{"ns-cloud-a1.googledomains.com.", "ns-cloud-a2.googledomains.com."}
	z := &zone{
		mz: dnsv1.ManagedZone{
			Kind: "dns#managedZone", Name: name, DnsName: dnsName, Id: 1000 + s.seq,
			Visibility: visibility, NameServers: ns, CreationTime: time.Unix(int64(s.seq), 0).UTC().Format(time.RFC3339),
		},
		rrsets:  map[rrKey]*dnsv1.ResourceRecordSet{},
		changes: map[string]*dnsv1.Change{},
	}
	z.rrsets[rrKey{dnsName, "SOA"}] = &dnsv1.ResourceRecordSet{Kind: "dns#resourceRecordSet", Name: dnsName, Type: "SOA", Ttl: 21600,
		Rrdatas: []string{ns[0] + " cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"}}
	z.rrsets[rrKey{dnsName, "NS"}] = &dnsv1.ResourceRecordSet{Kind: "dns#resourceRecordSet", Name: dnsName, Type: "NS", Ttl: 21600, Rrdatas: ns}
	p.zones[name] = z
	mz := z.mz
	return &mz, nil
}

// Apply makes a change as changes.create does, for a test to set up records it did not publish.
func (s *Server) Apply(projectID, zoneName string, c *dnsv1.Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.zone(projectID, zoneName)
	if z == nil {
		return fmt.Errorf("no zone %s in project %s", zoneName, projectID)
	}
	if _, err := s.createChange(z, c); err != nil {
		return fmt.Errorf("%d %s: %s", err.code, err.reason, err.message)
	}
	return nil
}

// RecordSets returns a zone's record sets in (name, type) order, but its apex SOA and NS.
func (s *Server) RecordSets(projectID, zoneName string) []*dnsv1.ResourceRecordSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.zone(projectID, zoneName)
	if z == nil {
		return nil
	}
	var out []*dnsv1.ResourceRecordSet
	for _, rs := range z.sorted() {
		if rs.Name == z.mz.DnsName && (rs.Type == "SOA" || rs.Type == "NS") {
			continue
		}
		c := *rs
		c.Rrdatas = slices.Clone(rs.Rrdatas)
		out = append(out, &c)
	}
	return out
}

// Calls returns the requests answered so far; ResetCalls forgets them.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// ResetCalls forgets the calls answered so far.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// Changes counts the changes.create calls answered so far, failed ones included.
func (s *Server) Changes() int {
	n := 0
	for _, c := range s.Calls() {
		if c.Method == http.MethodPost {
			n++
		}
	}
	return n
}

// apiError is a Cloud DNS error: {"error":{"code","message","errors":[{"domain","reason","message"}]}}.
type apiError struct {
	code    int
	reason  string
	message string
}

func errorf(code int, reason, format string, args ...any) *apiError {
	return &apiError{code: code, reason: reason, message: fmt.Sprintf(format, args...)}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, body := s.serve(r)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: r.Method, Host: r.Host, Path: r.URL.Path, Status: status})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) serve(r *http.Request) (int, any) {
	res, err := s.route(r)
	if err != nil {
		return err.code, map[string]any{"error": map[string]any{
			"code": err.code, "message": err.message,
			"errors": []map[string]string{{"domain": "global", "reason": err.reason, "message": err.message}},
		}}
	}
	return http.StatusOK, res
}

func (s *Server) route(r *http.Request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth != nil {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, valid := s.auth.VerifyToken(tok); !ok || !valid {
			return nil, errorf(http.StatusUnauthorized, "required", "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		}
	}
	// dns/v1/projects/{project}/managedZones[/{zone}/(rrsets|changes[/{id}])]
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) < 4 || parts[0] != "dns" || parts[1] != "v1" || parts[2] != "projects" {
		return nil, errorf(http.StatusNotFound, "notFound", "no such path %s", r.URL.Path)
	}
	projectID, rest := parts[3], parts[4:]
	q := r.URL.Query()
	switch {
	case len(rest) == 1 && rest[0] == "managedZones" && r.Method == http.MethodGet:
		return s.listZones(projectID, q.Get("dnsName"), q.Get("maxResults"), q.Get("pageToken"))
	case len(rest) >= 3 && rest[0] == "managedZones":
		z := s.zone(projectID, rest[1])
		if z == nil {
			return nil, errorf(http.StatusNotFound, "notFound", "The 'parameters.managedZone' resource named '%s' does not exist.", rest[1])
		}
		switch {
		case len(rest) == 3 && rest[2] == "rrsets" && r.Method == http.MethodGet:
			return s.listRRSets(z, q.Get("name"), q.Get("type"), q.Get("maxResults"), q.Get("pageToken"))
		case len(rest) == 3 && rest[2] == "changes" && r.Method == http.MethodPost:
			var c dnsv1.Change
			if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
				return nil, errorf(http.StatusBadRequest, "parseError", "Parse Error: %v", err)
			}
			return s.createChange(z, &c)
		case len(rest) == 4 && rest[2] == "changes" && r.Method == http.MethodGet:
			c, ok := z.changes[rest[3]]
			if !ok {
				return nil, errorf(http.StatusNotFound, "notFound", "The 'parameters.changeId' resource named '%s' does not exist.", rest[3])
			}
			return c, nil
		}
	}
	return nil, errorf(http.StatusNotFound, "notFound", "no such method %s %s", r.Method, r.URL.Path)
}

// zone finds a managed zone by name or ID, as the API's managedZone parameter takes either.
func (s *Server) zone(projectID, nameOrID string) *zone {
	p := s.projects[projectID]
	if p == nil {
		return nil
	}
	if z, ok := p.zones[nameOrID]; ok {
		return z
	}
	for _, z := range p.zones {
		if strconv.FormatUint(z.mz.Id, 10) == nameOrID {
			return z
		}
	}
	return nil
}

func (s *Server) listZones(projectID, dnsName, maxResults, pageToken string) (any, *apiError) {
	var zones []*zone
	if p := s.projects[projectID]; p != nil {
		for _, z := range p.zones {
			if dnsName == "" || strings.EqualFold(z.mz.DnsName, dnsName) || strings.EqualFold(z.mz.DnsName, dnsName+".") {
				zones = append(zones, z)
			}
		}
	}
	slices.SortFunc(zones, func(a, b *zone) int { return cmp.Compare(a.mz.Name, b.mz.Name) })
	keys := make([]string, len(zones))
	for i, z := range zones {
		keys[i] = z.mz.Name
	}
	from, to, next, err := s.page(keys, maxResults, pageToken)
	if err != nil {
		return nil, err
	}
	resp := &dnsv1.ManagedZonesListResponse{Kind: "dns#managedZonesListResponse", NextPageToken: next, ManagedZones: []*dnsv1.ManagedZone{}}
	for _, z := range zones[from:to] {
		mz := z.mz
		resp.ManagedZones = append(resp.ManagedZones, &mz)
	}
	return resp, nil
}

func (s *Server) listRRSets(z *zone, name, typ, maxResults, pageToken string) (any, *apiError) {
	if typ != "" && name == "" {
		return nil, errorf(http.StatusBadRequest, "invalid", "The 'parameters.type' parameter requires the 'parameters.name' parameter.")
	}
	var sets []*dnsv1.ResourceRecordSet
	for _, rs := range z.sorted() {
		if (name == "" || strings.EqualFold(rs.Name, name)) && (typ == "" || rs.Type == typ) {
			sets = append(sets, rs)
		}
	}
	keys := make([]string, len(sets))
	for i, rs := range sets {
		keys[i] = rs.Name + " " + rs.Type
	}
	from, to, next, err := s.page(keys, maxResults, pageToken)
	if err != nil {
		return nil, err
	}
	return &dnsv1.ResourceRecordSetsListResponse{Kind: "dns#resourceRecordSetsListResponse", Rrsets: append([]*dnsv1.ResourceRecordSet{}, sets[from:to]...), NextPageToken: next}, nil
}

// page picks a page of sorted keys: the token is the (encoded) last key of the previous page, so
// a list that changes between pages neither repeats nor skips an item that stayed.
func (s *Server) page(keys []string, maxResults, pageToken string) (from, to int, next string, _ *apiError) {
	n := s.pageSize
	if maxResults != "" {
		v, err := strconv.Atoi(maxResults)
		if err != nil || v <= 0 {
			return 0, 0, "", errorf(http.StatusBadRequest, "invalid", "Invalid value for 'parameters.maxResults': %q", maxResults)
		}
		n = v
	}
	if pageToken != "" {
		after, err := base64.RawURLEncoding.DecodeString(pageToken)
		if err != nil {
			return 0, 0, "", errorf(http.StatusBadRequest, "invalid", "Invalid value for 'parameters.pageToken': %q", pageToken)
		}
		from, _ = slices.BinarySearch(keys, string(after)+"\x00")
	}
	to = min(from+n, len(keys))
	if to < len(keys) {
		next = base64.RawURLEncoding.EncodeToString([]byte(keys[to-1]))
	}
	return from, to, next, nil
}

func (z *zone) sorted() []*dnsv1.ResourceRecordSet {
	var out []*dnsv1.ResourceRecordSet
	for _, rs := range z.rrsets {
		out = append(out, rs)
	}
	slices.SortFunc(out, func(a, b *dnsv1.ResourceRecordSet) int {
		return cmp.Compare(a.Name+" "+a.Type, b.Name+" "+b.Type)
	})
	return out
}

// createChange checks every deletion and addition against the zone as it would be, then applies
// them all, or none: a change is atomic.
func (s *Server) createChange(z *zone, c *dnsv1.Change) (any, *apiError) {
	if len(c.Additions) == 0 && len(c.Deletions) == 0 {
		return nil, errorf(http.StatusBadRequest, "required", "The 'entity.change' parameter is required but was missing.")
	}
	if len(c.Additions) > MaxAdditionsPerChange || len(c.Deletions) > MaxDeletionsPerChange {
		return nil, errorf(http.StatusRequestEntityTooLarge, "quotaExceeded", "A change may add at most %d and delete at most %d resource record sets; this one adds %d and deletes %d.",
			MaxAdditionsPerChange, MaxDeletionsPerChange, len(c.Additions), len(c.Deletions))
	}
	size := 0
	for _, rs := range slices.Concat(c.Additions, c.Deletions) {
		for _, d := range rs.Rrdatas {
			size += len(d)
		}
	}
	if size > MaxRrdataBytes {
		return nil, errorf(http.StatusRequestEntityTooLarge, "quotaExceeded", "The change's resource record data is %d bytes, more than %d.", size, MaxRrdataBytes)
	}
	next := cloneSets(z.rrsets)
	for i, d := range c.Deletions {
		field := fmt.Sprintf("entity.change.deletions[%d]", i)
		if err := z.validate(field, d); err != nil {
			return nil, err
		}
		k := keyOf(d)
		cur, ok := next[k]
		switch {
		case !ok:
			return nil, errorf(http.StatusNotFound, "notFound", "The '%s' resource named '%s' does not exist.", field, k)
		case cur.Ttl != d.Ttl || !sameData(cur.Rrdatas, d.Rrdatas):
			return nil, errorf(http.StatusPreconditionFailed, "conditionNotMet", "Precondition not met for '%s'", field)
		}
		delete(next, k)
	}
	for i, a := range c.Additions {
		field := fmt.Sprintf("entity.change.additions[%d]", i)
		if err := z.validate(field, a); err != nil {
			return nil, err
		}
		k := keyOf(a)
		if _, ok := next[k]; ok {
			return nil, errorf(http.StatusConflict, "alreadyExists", "The resource '%s' named '%s' already exists", field, k)
		}
		for other := range next {
			if other.name == k.name && (k.typ == "CNAME") != (other.typ == "CNAME") {
				return nil, errorf(http.StatusBadRequest, "cnameResourceRecordSetConflict",
					"The resource record set '%s' is invalid because the DNS name '%s' may have either one CNAME resource record set or resource record sets of other types, but not both.", field, k.name)
			}
		}
		next[k] = &dnsv1.ResourceRecordSet{Kind: "dns#resourceRecordSet", Name: k.name, Type: k.typ, Ttl: a.Ttl, Rrdatas: slices.Clone(a.Rrdatas)}
	}
	z.rrsets = next
	s.seq++
	id := strconv.FormatUint(s.seq, 10)
	done := &dnsv1.Change{
		Kind: "dns#change", Id: id, Status: "done", StartTime: time.Unix(int64(s.seq), 0).UTC().Format(time.RFC3339),
		Additions: c.Additions, Deletions: c.Deletions,
	}
	z.changes[id] = done
	return done, nil
}

func cloneSets(m map[rrKey]*dnsv1.ResourceRecordSet) map[rrKey]*dnsv1.ResourceRecordSet {
	out := make(map[rrKey]*dnsv1.ResourceRecordSet, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func keyOf(rs *dnsv1.ResourceRecordSet) rrKey { return rrKey{strings.ToLower(rs.Name), rs.Type} }

func sameData(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// types are the record types Cloud DNS serves (reference: ResourceRecordSet.type, "Supported
// record types").
var types = []string{"A", "AAAA", "ALIAS", "CAA", "CNAME", "DNSKEY", "DS", "HTTPS", "IPSECKEY", "MX", "NAPTR", "NS", "PTR", "SOA", "SPF", "SRV", "SSHFP", "SVCB", "TLSA", "TXT"}

// validate refuses what the reference's invalidValue, invalidRecordCount and invalidZoneApex
// describe, for the record types fleetgate writes; other types' data is not checked.
func (z *zone) validate(field string, rs *dnsv1.ResourceRecordSet) *apiError {
	name := strings.ToLower(rs.Name)
	invalid := func(format string, args ...any) *apiError {
		return errorf(http.StatusBadRequest, "invalidValue", "Invalid value for '%s': %s", field, fmt.Sprintf(format, args...))
	}
	switch {
	case !strings.HasSuffix(name, ".") || strings.Contains(name, "..") || len(name) > 254:
		return invalid("%q is not a fully qualified DNS name", rs.Name)
	case name != z.mz.DnsName && !strings.HasSuffix(name, "."+z.mz.DnsName):
		return invalid("%q is not within the zone %q", rs.Name, z.mz.DnsName)
	case !slices.Contains(types, rs.Type):
		return invalid("type %q", rs.Type)
	case len(rs.Rrdatas) == 0:
		return invalid("the resource record set %q has no records", rs.Name)
	case rs.Ttl < 0:
		return invalid("ttl %d", rs.Ttl)
	case rs.RoutingPolicy != nil:
		return errorf(http.StatusNotImplemented, "notImplemented", "routingPolicy is not modelled by this fake")
	case rs.Type == "CNAME" && len(rs.Rrdatas) != 1:
		return errorf(http.StatusBadRequest, "invalidRecordCount", "The resource record set '%s' is only permitted to have one record because it is of type CNAME.", field)
	case rs.Type == "SOA" && name != z.mz.DnsName:
		return errorf(http.StatusBadRequest, "invalidZoneApex", "The resource record set '%s' is invalid: an SOA record set must be at the zone apex.", field)
	case rs.Type == "CNAME" && name == z.mz.DnsName:
		return errorf(http.StatusBadRequest, "recordTypeDisallowedAtZoneApex", "The resource record set '%s' is invalid: a CNAME cannot be at the zone apex.", field)
	}
	for _, d := range rs.Rrdatas {
		ip, err := netip.ParseAddr(d)
		switch {
		case rs.Type == "A" && (err != nil || !ip.Is4()):
			return invalid("%q is not an IPv4 address", d)
		case rs.Type == "AAAA" && (err != nil || !ip.Is6() || ip.Is4In6()):
			return invalid("%q is not an IPv6 address", d)
		case rs.Type == "CNAME" && !strings.HasSuffix(d, "."):
			return invalid("%q is not a fully qualified DNS name", d)
		}
	}
	return nil
}
