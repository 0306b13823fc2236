// Package gcpfake is an in-memory fake of the Compute Engine v1 REST API for the load-balancing
// resources fleetgate uses, served by httptest so that the real cloud.google.com/go/compute/apiv1
// clients talk to it unchanged. It is a contract written from the compute v1 reference (see
// README.md): references are checked, fingerprints enforced, addresses allocated, operations
// returned for every mutation. It is not an echo.
package gcpfake

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// LinkPrefix starts every selfLink the fake writes, as in the compute v1 API.
const LinkPrefix = "https://www.googleapis.com/compute/v1/"

// pathPrefix starts every request path the apiv1 REST clients send.
const pathPrefix = "/compute/v1/"

// Server is the fake. All methods are safe for concurrent use.
type Server struct {
	srv   *httptest.Server
	kinds map[string]*kind

	mu sync.Mutex
	// res holds every resource by its relative link, e.g. "projects/p/global/urlMaps/um".
	res map[string]proto.Message
	// endpoints holds the endpoints attached to each NEG, by the NEG's relative link.
	endpoints map[string][]*computepb.NetworkEndpoint
	ops       map[string]*computepb.Operation
	// seq numbers IDs, operations, fingerprints and timestamps, so runs are deterministic.
	seq     uint64
	calls   []Call
	faults  []*fault
	rate    *faultRate
	running bool
	auth    authState
	// normalize rewrites what a write stores (SetNormalizer).
	normalize func(collection string, m proto.Message)
}

// New starts a fake; Close stops it.
func New() *Server {
	s := &Server{kinds: kindTable(), auth: authState{accounts: map[string]*rsa.PublicKey{}, tokens: map[string]string{}}}
	s.Reset()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// NewServer starts a fake that is closed when tb ends.
func NewServer(tb testing.TB) *Server {
	s := New()
	tb.Cleanup(s.Close)
	return s
}

// URL is the endpoint for option.WithEndpoint: scheme, host and port, no path.
func (s *Server) URL() string { return s.srv.URL }

// ClientOptions point an apiv1 REST client at the fake without authentication.
func (s *Server) ClientOptions() []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(s.srv.URL),
		option.WithoutAuthentication(),
		option.WithHTTPClient(s.srv.Client()),
	}
}

// NoAuth points a client at the fake without authentication, keeping the caller's HTTP
// transport (for callers that build their own, which WithHTTPClient would replace).
func (s *Server) NoAuth() []option.ClientOption {
	return []option.ClientOption{option.WithEndpoint(s.srv.URL), option.WithoutAuthentication()}
}

// Close stops the HTTP server.
func (s *Server) Close() { s.srv.Close() }

// Reset forgets all resources, operations, calls and faults, and restarts the counters.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res = map[string]proto.Message{}
	s.endpoints = map[string][]*computepb.NetworkEndpoint{}
	s.ops = map[string]*computepb.Operation{}
	s.seq = 0
	s.calls = nil
	s.faults = nil
	s.rate = nil
	s.running = false
}

// SetRunningOperations makes mutation responses report RUNNING (the change is still applied at
// once and the first GET of the operation reports DONE), so that callers exercise op.Wait.
func (s *Server) SetRunningOperations(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = on
}

// SetNormalizer makes every insert and update of the fake store what f makes of the written
// resource (f gets the collection, "urlMaps", …, and the message to change in place): GCE keeps
// some values in a form of its own (case, defaults, order), which a client reading back must not
// take for someone else's change. nil stores what is written.
func (s *Server) SetNormalizer(f func(collection string, m proto.Message)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.normalize = f
}

// Link returns the selfLink for a relative link such as "projects/p/global/urlMaps/um".
func Link(key string) string { return LinkPrefix + key }

// Get returns a copy of the resource at key ("projects/P/global/urlMaps/N",
// "projects/P/regions/R/backendServices/N", "projects/P/zones/Z/networkEndpointGroups/N"), with the
// fields the server derives (address users and status, NEG size) filled in as a GET would.
func Get[T proto.Message](s *Server, key string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero T
	m, ok := s.res[key]
	if !ok {
		return zero, false
	}
	t, ok := s.view(key, m).(T)
	return t, ok
}

// Keys lists the relative links of all resources of a collection ("urlMaps", "addresses", …) in
// every project and scope, sorted.
func (s *Server) Keys(collection string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.res {
		if _, coll, _ := splitKey(k); coll == collection {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// Count is len(Keys(collection)).
func (s *Server) Count(collection string) int { return len(s.Keys(collection)) }

// Endpoints returns copies of the endpoints attached to the NEG at key, in attach order.
func (s *Server) Endpoints(negKey string) []*computepb.NetworkEndpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*computepb.NetworkEndpoint, 0, len(s.endpoints[negKey]))
	for _, ep := range s.endpoints[negKey] {
		out = append(out, proto.CloneOf(ep))
	}
	return out
}

// request is one parsed REST call.
type request struct {
	call    *Call
	project string
	scope   string // "global", "regions/R" or "zones/Z"
	coll    string
	name    string
	action  string
	bare    bool // a global action addressed without "global/"
}

func (r *request) key() string { return resKey(r.project, r.scope, r.coll, r.name) }

func resKey(project, scope, coll, name string) string {
	return "projects/" + project + "/" + scope + "/" + coll + "/" + name
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call := Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body}

	code, out := s.handleAndLog(&call)

	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write(out)
}

func (s *Server) handleAndLog(call *Call) (int, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	code, out := s.handle(call)
	call.Status = code
	s.calls = append(s.calls, *call)
	return code, out
}

// handle answers one call with the mu held. A call that fails changes nothing.
func (s *Server) handle(call *Call) (int, []byte) {
	if err := s.injected(call); err != nil {
		return err.response()
	}
	req, err := parsePath(call)
	if err != nil {
		return err.response()
	}
	out, err := s.route(req)
	if err != nil {
		return err.response()
	}
	b, merr := marshal(out)
	if merr != nil {
		return errorf(http.StatusInternalServerError, "backendError", "marshal: %v", merr).response()
	}
	return http.StatusOK, b
}

// parsePath splits /compute/v1/projects/P/{global|regions/R|zones/Z}/COLL[/NAME[/ACTION]].
// Two other forms exist: aggregated lists, and the global target proxy actions
// (projects/P/targetHttpProxies/N/setUrlMap, projects/P/targetHttpsProxies/N/setSslCertificates),
// which the v1 reference and the apiv1 client put outside "global/".
func parsePath(call *Call) (*request, *apiError) {
	notFound := errorf(http.StatusNotFound, "notFound", "The requested URL %s was not found on this server.", call.Path)
	rest, ok := strings.CutPrefix(call.Path, pathPrefix+"projects/")
	if !ok {
		return nil, notFound
	}
	seg := strings.Split(rest, "/")
	req := &request{call: call, project: seg[0]}
	seg = seg[1:]
	switch {
	case len(seg) >= 2 && seg[0] == "global":
		req.scope, seg = "global", seg[1:]
	case len(seg) >= 3 && (seg[0] == "regions" || seg[0] == "zones"):
		req.scope, seg = seg[0]+"/"+seg[1], seg[2:]
	case len(seg) == 2 && seg[0] == "aggregated":
		req.scope, seg = "aggregated", seg[1:]
	case len(seg) == 3 && (seg[0] == "targetHttpProxies" || seg[0] == "targetHttpsProxies"):
		req.scope, req.bare = "global", true
	default:
		return nil, notFound
	}
	if req.project == "" || len(seg) > 3 || slices.Contains(seg, "") {
		return nil, notFound
	}
	req.coll = seg[0]
	if len(seg) > 1 {
		req.name = seg[1]
	}
	if len(seg) > 2 {
		req.action = seg[2]
	}
	return req, nil
}

// route dispatches a parsed call to its handler.
func (s *Server) route(req *request) (any, *apiError) {
	method := req.call.Method
	unsupported := errorf(http.StatusNotFound, "notFound", "gcpfake does not serve %s %s", method, req.call.Path)
	switch {
	case req.scope == "aggregated":
		k, ok := s.kinds[req.coll]
		if !ok || (k.global && !k.zonal) || method != http.MethodGet {
			return nil, unsupported // firewalls have no aggregated list
		}
		return s.aggregated(req, k)
	case req.coll == "operations":
		if method != http.MethodGet || req.name == "" || req.action != "" {
			return nil, unsupported
		}
		op, ok := s.ops[req.key()]
		if !ok {
			return nil, notFoundError(req.key())
		}
		return op, nil
	}
	k, ok := s.kinds[req.coll]
	if !ok || !k.servesScope(req.scope) {
		return nil, unsupported
	}
	switch {
	case req.name == "" && method == http.MethodGet:
		return s.list(req, k)
	case req.name == "" && method == http.MethodPost:
		return s.insert(req, k)
	case req.action == "" && method == http.MethodGet:
		m, ok := s.res[req.key()]
		if !ok {
			return nil, notFoundError(req.key())
		}
		return s.view(req.key(), m), nil
	case req.action == "" && method == http.MethodDelete:
		return s.delete(req)
	case req.action == "" && method == http.MethodPut && k.update:
		return s.replace(req, k, false)
	case req.action == "" && method == http.MethodPatch && k.patch:
		return s.replace(req, k, true)
	case req.action == "listNetworkEndpoints" && method == http.MethodPost && req.coll == "networkEndpointGroups":
		return s.listEndpoints(req)
	case req.action != "" && method == http.MethodPost:
		// A global action is served only at the path the reference gives it (see parsePath).
		if a, ok := k.actions[req.action]; ok && req.bare == (a.bareGlobal && req.scope == "global") {
			return s.act(req, k, a)
		}
	}
	return nil, unsupported
}

// marshal writes a response: proto messages as proto-JSON (lowerCamel names, as the REST API),
// anything else as JSON.
func marshal(v any) ([]byte, error) {
	if m, ok := v.(proto.Message); ok {
		return protojson.Marshal(m)
	}
	return json.Marshal(v)
}

// unmarshal reads a request body as the REST API does: unknown fields are ignored.
func unmarshal(body []byte, m proto.Message) *apiError {
	if len(body) == 0 {
		return errorf(http.StatusBadRequest, "required", "Required field 'resource' not specified")
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, m); err != nil {
		return errorf(http.StatusBadRequest, "parseError", "Invalid JSON payload received. %v", err)
	}
	return nil
}

// stamp returns the next deterministic timestamp: counters, not the clock, so runs compare equal.
func (s *Server) stamp() string {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(s.seq) * time.Second).Format("2006-01-02T15:04:05.000-07:00")
}

func (s *Server) next() uint64 {
	s.seq++
	return s.seq
}

// scopeLink is the "region" or "zone" field of a regional or zonal resource.
func scopeLink(project, scope string) (field, link string) {
	switch {
	case strings.HasPrefix(scope, "regions/"):
		return "region", Link("projects/" + project + "/" + scope)
	case strings.HasPrefix(scope, "zones/"):
		return "zone", Link("projects/" + project + "/" + scope)
	}
	return "", ""
}

// operation records the Operation of a mutation in the request's scope; f, if set, makes it fail.
func (s *Server) operation(req *request, opType, target string, targetID uint64, f *Fault) *computepb.Operation {
	id := s.next()
	name := fmt.Sprintf("operation-%d", id)
	key := resKey(req.project, req.scope, "operations", name)
	now := s.stamp()
	op := &computepb.Operation{
		Kind:          proto.String("compute#operation"),
		Id:            proto.Uint64(id),
		Name:          proto.String(name),
		OperationType: proto.String(opType),
		Status:        computepb.Operation_DONE.Enum(),
		Progress:      proto.Int32(100),
		TargetLink:    proto.String(Link(target)),
		SelfLink:      proto.String(Link(key)),
		InsertTime:    proto.String(now),
		StartTime:     proto.String(now),
		EndTime:       proto.String(now),
	}
	if targetID != 0 {
		op.TargetId = proto.Uint64(targetID)
	}
	switch field, link := scopeLink(req.project, req.scope); field {
	case "region":
		op.Region = proto.String(link)
	case "zone":
		op.Zone = proto.String(link)
	}
	if f != nil {
		op.Error = &computepb.Error{Errors: []*computepb.Errors{{Code: proto.String(f.Reason), Message: proto.String(f.message())}}}
		if f.WithHTTPStatus {
			op.HttpErrorStatusCode = proto.Int32(int32(f.Code))
			op.HttpErrorMessage = proto.String(strings.ToUpper(http.StatusText(f.Code)))
		}
	}
	s.ops[key] = op
	return op
}

// mutate ends every validated change: it applies the change and returns a DONE operation, unless
// an injected operation fault matches, in which case the operation fails and nothing is applied.
func (s *Server) mutate(req *request, opType, target string, apply func()) (any, *apiError) {
	f := s.operationFault(req.call)
	var targetID uint64
	if m, ok := s.res[target]; ok {
		targetID = getUint(m, "id") // before a delete removes it
	}
	if f == nil {
		apply()
	}
	if m, ok := s.res[target]; ok {
		targetID = getUint(m, "id")
	}
	op := proto.CloneOf(s.operation(req, opType, target, targetID, f))
	if s.running {
		op.Status = computepb.Operation_RUNNING.Enum()
		op.Progress = proto.Int32(0)
		op.EndTime = nil
	}
	return op, nil
}
