package gcpfake

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// kind describes one REST collection. Whether a kind carries fingerprint, labelFingerprint and
// labels is read from its message descriptor, so the table states only what differs.
type kind struct {
	kind   string // "compute#urlMap"; lists are "compute#urlMapList"
	new    func() proto.Message
	zonal  bool // served under zones/Z only; otherwise under global/ and regions/R
	global bool // served under global/ only (firewalls)
	update bool // PUT
	patch  bool // PATCH
	// optionalFingerprint: per the compute v1 reference, ForwardingRule.fingerprint is only to be
	// "included in patch request"; for UrlMap and BackendService "an up-to-date fingerprint must be
	// provided in order to update", so a missing one is refused with 412 like a stale one.
	optionalFingerprint bool
	// refs lists the reference fields of a resource, which must name existing resources.
	refs func(m proto.Message) []ref
	// prepare validates an insert and fills server-set fields (addresses, NEG defaults, certificates).
	prepare func(s *Server, req *request, m proto.Message) *apiError
	actions map[string]action
}

// ref is one reference field: a pointer into the message so that it can be stored normalized.
type ref struct {
	field string
	ptr   *string
	colls []string // collections it may name
}

// action is a POST …/NAME/ACTION that changes one resource.
type action struct {
	body func() proto.Message
	// apply changes next (a copy of the stored resource); the returned func, if any, is run when
	// the change is committed, for state kept outside the resource (NEG endpoints).
	apply func(s *Server, req *request, next, body proto.Message) (func(), *apiError)
	// bareGlobal: the global form of this action is projects/P/COLL/N/ACTION, without "global/".
	bareGlobal bool
}

func (k *kind) servesScope(scope string) bool {
	if k.zonal {
		return strings.HasPrefix(scope, "zones/")
	}
	if k.global {
		return scope == "global"
	}
	return scope == "global" || strings.HasPrefix(scope, "regions/")
}

// kindTable describes the served collections, by REST name.
func kindTable() map[string]*kind {
	setURLMap := action{
		bareGlobal: true,
		body:       func() proto.Message { return &computepb.UrlMapReference{} },
		apply: func(_ *Server, _ *request, next, body proto.Message) (func(), *apiError) {
			setString(next, "urlMap", body.(*computepb.UrlMapReference).GetUrlMap())
			return nil, nil
		},
	}

	// setLabels serves addresses and forwarding rules. The global (GlobalSetLabelsRequest) and
	// regional (RegionSetLabelsRequest) bodies are the same JSON.
	setLabels := action{
		body: func() proto.Message { return &computepb.GlobalSetLabelsRequest{} },
		apply: func(_ *Server, _ *request, next, body proto.Message) (func(), *apiError) {
			b := body.(*computepb.GlobalSetLabelsRequest)
			// Per the compute v1 reference (labelFingerprint): "You must always provide an up-to-date
			// fingerprint hash in order to update or change labels, otherwise the request will fail
			// with error 412 conditionNotMet."
			if b.GetLabelFingerprint() != getString(next, "labelFingerprint") {
				return nil, staleFingerprint("labelFingerprint")
			}
			fd := next.ProtoReflect().Descriptor().Fields().ByJSONName("labels")
			next.ProtoReflect().Clear(fd)
			lm := next.ProtoReflect().Mutable(fd).Map()
			for k, v := range b.GetLabels() {
				lm.Set(protoreflect.ValueOfString(k).MapKey(), protoreflect.ValueOfString(v))
			}
			return nil, nil
		},
	}

	return map[string]*kind{
		"addresses": {
			kind: "compute#address", new: func() proto.Message { return &computepb.Address{} },
			prepare: prepareAddress,
			actions: map[string]action{"setLabels": setLabels},
		},
		"forwardingRules": {
			kind: "compute#forwardingRule", new: func() proto.Message { return &computepb.ForwardingRule{} },
			patch: true, optionalFingerprint: true,
			prepare: prepareForwardingRule,
			refs: func(m proto.Message) []ref {
				fr := m.(*computepb.ForwardingRule)
				return []ref{
					{"target", fr.Target, []string{"targetHttpProxies", "targetHttpsProxies"}},
					{"backendService", fr.BackendService, []string{"backendServices"}},
				}
			},
			actions: map[string]action{
				"setLabels": setLabels,
				"setTarget": {
					body: func() proto.Message { return &computepb.TargetReference{} },
					apply: func(_ *Server, _ *request, next, body proto.Message) (func(), *apiError) {
						next.(*computepb.ForwardingRule).Target = body.(*computepb.TargetReference).Target
						return nil, nil
					},
				},
			},
		},
		"targetHttpProxies": {
			kind: "compute#targetHttpProxy", new: func() proto.Message { return &computepb.TargetHttpProxy{} },
			refs: func(m proto.Message) []ref {
				return []ref{{"urlMap", m.(*computepb.TargetHttpProxy).UrlMap, []string{"urlMaps"}}}
			},
			actions: map[string]action{"setUrlMap": setURLMap},
		},
		"targetHttpsProxies": {
			kind: "compute#targetHttpsProxy", new: func() proto.Message { return &computepb.TargetHttpsProxy{} },
			refs: func(m proto.Message) []ref {
				p := m.(*computepb.TargetHttpsProxy)
				refs := []ref{{"urlMap", p.UrlMap, []string{"urlMaps"}}}
				for i := range p.SslCertificates {
					refs = append(refs, ref{"sslCertificates", &p.SslCertificates[i], []string{"sslCertificates"}})
				}
				return refs
			},
			actions: map[string]action{
				"setUrlMap": setURLMap,
				"setSslCertificates": {
					bareGlobal: true,
					// The global (TargetHttpsProxiesSetSslCertificatesRequest) and regional
					// (RegionTargetHttpsProxiesSetSslCertificatesRequest) bodies are the same JSON.
					body: func() proto.Message { return &computepb.TargetHttpsProxiesSetSslCertificatesRequest{} },
					apply: func(_ *Server, _ *request, next, body proto.Message) (func(), *apiError) {
						certs := body.(*computepb.TargetHttpsProxiesSetSslCertificatesRequest).SslCertificates
						if len(certs) == 0 {
							return nil, errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.sslCertificates': ''. At least one SSL certificate must be specified.")
						}
						next.(*computepb.TargetHttpsProxy).SslCertificates = certs
						return nil, nil
					},
				},
			},
		},
		"urlMaps": {
			kind: "compute#urlMap", new: func() proto.Message { return &computepb.UrlMap{} },
			update: true, patch: true,
			refs: urlMapRefs,
		},
		"backendServices": {
			kind: "compute#backendService", new: func() proto.Message { return &computepb.BackendService{} },
			update: true, patch: true,
			refs: func(m proto.Message) []ref {
				bs := m.(*computepb.BackendService)
				var refs []ref
				for i := range bs.HealthChecks {
					refs = append(refs, ref{"healthChecks", &bs.HealthChecks[i], []string{"healthChecks"}})
				}
				for _, b := range bs.Backends {
					refs = append(refs, ref{"backends.group", b.Group, []string{"networkEndpointGroups"}})
				}
				return refs
			},
		},
		// Firewall rules are global and name a network, which the fake does not model (so it is
		// not checked). Per the compute v1 reference they have no fingerprint: Update replaces one.
		"firewalls": {
			kind: "compute#firewall", new: func() proto.Message { return &computepb.Firewall{} },
			global: true, update: true, patch: true,
		},
		"healthChecks": {
			kind: "compute#healthCheck", new: func() proto.Message { return &computepb.HealthCheck{} },
			update: true, patch: true,
		},
		"sslCertificates": {
			kind: "compute#sslCertificate", new: func() proto.Message { return &computepb.SslCertificate{} },
			prepare: prepareCertificate,
		},
		"networkEndpointGroups": {
			kind: "compute#networkEndpointGroup", new: func() proto.Message { return &computepb.NetworkEndpointGroup{} },
			zonal: true, prepare: prepareNEG,
			actions: map[string]action{
				"attachNetworkEndpoints": {body: func() proto.Message { return &computepb.NetworkEndpointGroupsAttachEndpointsRequest{} }, apply: attachEndpoints},
				"detachNetworkEndpoints": {body: func() proto.Message { return &computepb.NetworkEndpointGroupsDetachEndpointsRequest{} }, apply: detachEndpoints},
			},
		},
	}
}

func urlMapRefs(m proto.Message) []ref {
	u := m.(*computepb.UrlMap)
	var refs []ref
	add := func(field string, p *string) { refs = append(refs, ref{field, p, []string{"backendServices"}}) }
	weighted := func(field string, ra *computepb.HttpRouteAction) {
		for _, w := range ra.GetWeightedBackendServices() {
			add(field+".weightedBackendServices.backendService", w.BackendService)
		}
	}
	add("defaultService", u.DefaultService)
	weighted("defaultRouteAction", u.DefaultRouteAction)
	for _, pm := range u.PathMatchers {
		add("pathMatchers.defaultService", pm.DefaultService)
		weighted("pathMatchers.defaultRouteAction", pm.DefaultRouteAction)
		for _, pr := range pm.PathRules {
			add("pathMatchers.pathRules.service", pr.Service)
			weighted("pathMatchers.pathRules.routeAction", pr.RouteAction)
		}
		for _, rr := range pm.RouteRules {
			add("pathMatchers.routeRules.service", rr.Service)
			weighted("pathMatchers.routeRules.routeAction", rr.RouteAction)
		}
	}
	return refs
}

// nameRE is the RFC 1035 rule every compute resource name follows (reference: "name").
var nameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// outputOnly are fields the server owns: ignored on insert, kept on update and patch.
func outputOnly() []string {
	return []string{"id", "kind", "selfLink", "creationTimestamp", "region", "zone", "fingerprint", "labelFingerprint"}
}

func (s *Server) insert(req *request, k *kind) (any, *apiError) {
	m := k.new()
	if err := unmarshal(req.call.Body, m); err != nil {
		return nil, err
	}
	req.name = getString(m, "name")
	if !nameRE.MatchString(req.name) {
		return nil, errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.name': '%s'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'", req.name)
	}
	key := req.key()
	if _, ok := s.res[key]; ok {
		return nil, errorf(http.StatusConflict, "alreadyExists", "The resource '%s' already exists", key)
	}
	for _, f := range outputOnly() {
		clearField(m, f)
	}
	if k.prepare != nil {
		if err := k.prepare(s, req, m); err != nil {
			return nil, err
		}
	}
	return s.store(req, k, "insert", nil, m, nil)
}

// store ends insert, update, patch and actions: it checks next's references, then commits next
// (and extra, for state kept outside the resource) unless the operation fails.
func (s *Server) store(req *request, k *kind, opType string, cur, next proto.Message, extra func()) (any, *apiError) {
	if err := s.resolve(req, k, next); err != nil {
		return nil, err
	}
	key := req.key()
	return s.mutate(req, opType, key, func() {
		s.commit(req, key, cur, next)
		if extra != nil {
			extra()
		}
	})
}

// commit stores next at key: server fields are stamped on insert (prev == nil) and carried over
// otherwise; fingerprints change with every change, labelFingerprint when the labels change.
func (s *Server) commit(req *request, key string, prev, next proto.Message) {
	seq := s.next()
	if prev == nil {
		setUint(next, "id", seq)
		setString(next, "kind", s.kinds[req.coll].kind)
		setString(next, "selfLink", Link(key))
		setString(next, "creationTimestamp", s.stamp())
		if field, link := scopeLink(req.project, req.scope); field != "" {
			setString(next, field, link)
		}
	} else {
		for _, f := range outputOnly() {
			copyField(next, prev, f)
		}
	}
	if s.normalize != nil {
		s.normalize(req.coll, next)
	}
	if hasField(next, "fingerprint") {
		setString(next, "fingerprint", fingerprint(key, seq))
	}
	if hasField(next, "labelFingerprint") && (prev == nil || !labelsEqual(prev, next)) {
		setString(next, "labelFingerprint", fingerprint(key+"/labels", seq))
	}
	s.res[key] = next
}

// replace serves update (PUT: the body replaces the resource) and patch (PATCH: the body is a JSON
// merge patch, per the reference "This method supports PATCH semantics and uses the JSON merge
// patch format and processing rules", so fields absent from the body, such as empty lists the
// client drops, are kept).
func (s *Server) replace(req *request, k *kind, patch bool) (any, *apiError) {
	key := req.key()
	cur, ok := s.res[key]
	if !ok {
		return nil, notFoundError(key)
	}
	body := k.new()
	if err := unmarshal(req.call.Body, body); err != nil {
		return nil, err
	}
	next := body
	if patch {
		var err *apiError
		if next, err = mergePatch(cur, req.call.Body); err != nil {
			return nil, err
		}
	}
	if name := getString(body, "name"); name != req.name && (!patch || name != "") {
		return nil, errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.name': '%s'. The name must be '%s'.", name, req.name)
	}
	if hasField(cur, "fingerprint") {
		fp := getString(body, "fingerprint")
		if fp != getString(cur, "fingerprint") && (fp != "" || !k.optionalFingerprint) {
			return nil, staleFingerprint("fingerprint")
		}
	}
	if hasField(next, "labels") {
		// Labels change only through setLabels (reference: "These can only be added or modified
		// by the setLabels method").
		copyField(next, cur, "labels")
	}
	opType := "update"
	if patch {
		opType = "patch"
	}
	return s.store(req, k, opType, cur, next, nil)
}

func (s *Server) act(req *request, k *kind, a action) (any, *apiError) {
	key := req.key()
	cur, ok := s.res[key]
	if !ok {
		return nil, notFoundError(key)
	}
	body := a.body()
	if err := unmarshal(req.call.Body, body); err != nil {
		return nil, err
	}
	next := proto.Clone(cur)
	extra, err := a.apply(s, req, next, body)
	if err != nil {
		return nil, err
	}
	return s.store(req, k, req.action, cur, next, extra)
}

func (s *Server) delete(req *request) (any, *apiError) {
	key := req.key()
	if _, ok := s.res[key]; !ok {
		return nil, notFoundError(key)
	}
	if user := s.userOf(key); user != "" {
		_, coll, _ := splitKey(key)
		return nil, errorf(http.StatusBadRequest, "resourceInUseByAnotherResource",
			"The %s resource '%s' is already being used by '%s'", coll, key, user)
	}
	return s.mutate(req, "delete", key, func() {
		delete(s.res, key)
		delete(s.endpoints, key)
	})
}

// userOf returns the first resource (in key order) that references key, or "".
func (s *Server) userOf(key string) string {
	if a, ok := s.res[key].(*computepb.Address); ok {
		if users := s.addressUsers(key, a); len(users) > 0 {
			return strings.TrimPrefix(users[0], LinkPrefix)
		}
		return ""
	}
	link := Link(key)
	for _, other := range sortedKeys(s.res) {
		_, coll, _ := splitKey(other)
		if refs := s.kinds[coll].refs; refs != nil {
			for _, r := range refs(s.res[other]) {
				if r.ptr != nil && *r.ptr == link {
					return other
				}
			}
		}
	}
	return ""
}

// resolve checks every reference of m and stores it as a full selfLink.
func (s *Server) resolve(req *request, k *kind, m proto.Message) *apiError {
	if k.refs == nil {
		return nil
	}
	for _, r := range k.refs(m) {
		if r.ptr == nil || *r.ptr == "" {
			continue
		}
		key, ok := parseLink(req.project, *r.ptr)
		scope, coll, _ := splitKey(key)
		invalid := func(why string) *apiError {
			return errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.%s': '%s'. %s", r.field, *r.ptr, why)
		}
		switch {
		case !ok:
			return invalid("The URL is malformed.")
		case !slices.Contains(r.colls, coll):
			return invalid("Expected a reference to " + strings.Join(r.colls, " or ") + ".")
		case !scopeReaches(req.scope, scope):
			return invalid("A resource in " + req.scope + " cannot reference a resource in " + scope + ".")
		}
		// A missing referenced resource is 404 notFound naming it, as GCE answers (e.g. "The resource
		// 'projects/p/global/backendServices/x' was not found"); 400 is kept for malformed or
		// wrong-kind references, which GCE reports as invalid field values.
		if _, ok := s.res[key]; !ok {
			return notFoundError(key)
		}
		*r.ptr = Link(key)
	}
	return nil
}

// scopeReaches reports whether a resource in scope from may reference one in scope to: global
// with global, a region with the same region, zonal NEGs from global or from their own region.
func scopeReaches(from, to string) bool {
	switch {
	case to == "global":
		return from == "global"
	case strings.HasPrefix(to, "regions/"):
		return from == to
	case strings.HasPrefix(to, "zones/"):
		return from == "global" || strings.HasPrefix(to, "zones/"+strings.TrimPrefix(from, "regions/")+"-")
	}
	return false
}

// parseLink turns a full URL, "projects/P/…" or a partial "global/…", "regions/R/…", "zones/Z/…"
// path into a relative link "projects/P/SCOPE/COLL/NAME".
func parseLink(project, link string) (string, bool) {
	for _, p := range []string{LinkPrefix, "https://compute.googleapis.com/compute/v1/"} {
		link = strings.TrimPrefix(link, p)
	}
	if !strings.HasPrefix(link, "projects/") {
		link = "projects/" + project + "/" + link
	}
	_, _, name := splitKey(link)
	return link, name != ""
}

// splitKey splits "projects/P/SCOPE/COLL/NAME" into its scope, collection and name ("" if malformed).
func splitKey(key string) (scope, coll, name string) {
	seg := strings.Split(key, "/")
	switch {
	case len(seg) == 5 && seg[0] == "projects" && seg[2] == "global":
		scope, seg = "global", seg[3:]
	case len(seg) == 6 && seg[0] == "projects" && (seg[2] == "regions" || seg[2] == "zones"):
		scope, seg = seg[2]+"/"+seg[3], seg[4:]
	default:
		return "", "", ""
	}
	if slices.Contains(seg, "") || seg[1] == "" {
		return "", "", ""
	}
	return scope, seg[0], seg[1]
}

func labelsEqual(a, b proto.Message) bool {
	return maps.Equal(labelsOf(a), labelsOf(b))
}

func labelsOf(m proto.Message) map[string]string {
	switch m := m.(type) {
	case *computepb.Address:
		return m.Labels
	case *computepb.ForwardingRule:
		return m.Labels
	}
	return nil
}
