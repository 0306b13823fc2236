package gcpfake

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// entry is one listed item with the key it is ordered and paged by.
type entry struct {
	key string
	msg proto.Message
}

// listPage is the JSON of a compute list response. Items are proto-JSON.
type listPage struct {
	Kind          string            `json:"kind"`
	ID            string            `json:"id"`
	Items         []json.RawMessage `json:"items,omitempty"`
	NextPageToken string            `json:"nextPageToken,omitempty"`
	SelfLink      string            `json:"selfLink"`
}

func (s *Server) list(req *request, k *kind) (any, *apiError) {
	prefix := resKey(req.project, req.scope, req.coll, "")
	var entries []entry
	for _, key := range sortedKeys(s.res) {
		if strings.HasPrefix(key, prefix) {
			entries = append(entries, entry{key, s.view(key, s.res[key])})
		}
	}
	page, next, err := pageOf(req, entries)
	if err != nil {
		return nil, err
	}
	return listResponse(k.kind+"List", strings.TrimSuffix(prefix, "/"), next, page)
}

func listResponse(kind, id, next string, page []entry) (any, *apiError) {
	out := listPage{Kind: kind, ID: id, NextPageToken: next, SelfLink: Link(id)}
	for _, e := range page {
		b, err := protojson.Marshal(e.msg)
		if err != nil {
			return nil, errorf(http.StatusInternalServerError, "backendError", "marshal: %v", err)
		}
		out.Items = append(out.Items, b)
	}
	return out, nil
}

// aggregatedPage is the JSON of a compute aggregated list: items by scope ("global",
// "regions/R", "zones/Z"), each a scoped list whose one field is named after the collection
// (AddressesScopedList.addresses, NetworkEndpointGroupsScopedList.networkEndpointGroups, …).
type aggregatedPage struct {
	Kind          string                                  `json:"kind"`
	ID            string                                  `json:"id"`
	Items         map[string]map[string][]json.RawMessage `json:"items,omitempty"`
	NextPageToken string                                  `json:"nextPageToken,omitempty"`
	SelfLink      string                                  `json:"selfLink"`
}

// aggregated serves GET aggregated/<collection>: the collection's resources in every scope the
// kind has, keyed by scope. The v1 reference describes those of backendServices, healthChecks,
// sslCertificates, urlMaps and the target proxies as "all … resources, regional and global".
func (s *Server) aggregated(req *request, k *kind) (any, *apiError) {
	prefix := "projects/" + req.project + "/"
	var entries []entry
	for _, key := range sortedKeys(s.res) {
		if _, coll, _ := splitKey(key); strings.HasPrefix(key, prefix) && coll == req.coll {
			entries = append(entries, entry{key, s.view(key, s.res[key])})
		}
	}
	page, next, err := pageOf(req, entries)
	if err != nil {
		return nil, err
	}
	id := prefix + "aggregated/" + req.coll
	out := aggregatedPage{Kind: k.kind + "AggregatedList", ID: id, NextPageToken: next, SelfLink: Link(id),
		Items: map[string]map[string][]json.RawMessage{}}
	for _, e := range page {
		b, err := protojson.Marshal(e.msg)
		if err != nil {
			return nil, errorf(http.StatusInternalServerError, "backendError", "marshal: %v", err)
		}
		scope, _, _ := splitKey(e.key)
		if out.Items[scope] == nil {
			out.Items[scope] = map[string][]json.RawMessage{}
		}
		out.Items[scope][req.coll] = append(out.Items[scope][req.coll], b)
	}
	return out, nil
}

// listEndpoints serves POST …/networkEndpointGroups/N/listNetworkEndpoints. Health is not modelled,
// so items carry no healths.
func (s *Server) listEndpoints(req *request) (any, *apiError) {
	key := req.key()
	if _, ok := s.res[key]; !ok {
		return nil, notFoundError(key)
	}
	var entries []entry
	for i, ep := range s.endpoints[key] {
		// Attach order, zero-padded so that keys sort in it.
		entries = append(entries, entry{key: strconv.Itoa(100000 + i), msg: &computepb.NetworkEndpointWithHealthStatus{NetworkEndpoint: ep}})
	}
	page, next, err := pageOf(req, entries)
	if err != nil {
		return nil, err
	}
	return listResponse("compute#networkEndpointGroupsListNetworkEndpoints", key+"/listNetworkEndpoints", next, page)
}

// pageOf applies the filter, pageToken and maxResults query parameters to entries sorted by key.
// The page token is opaque to clients: it encodes the last key returned.
func pageOf(req *request, entries []entry) ([]entry, string, *apiError) {
	q := req.call.Query
	if f := q.Get("filter"); f != "" {
		match, err := parseFilter(f)
		if err != nil {
			return nil, "", err
		}
		kept := entries[:0:0]
		for _, e := range entries {
			b, _ := protojson.Marshal(e.msg)
			var obj map[string]any
			if json.Unmarshal(b, &obj) == nil && match(obj) {
				kept = append(kept, e)
			}
		}
		entries = kept
	}
	// Per the compute v1 reference (orderBy): "By default, results are returned in alphanumerical
	// order based on the resource name"; the other order it offers is not modelled.
	if o := q.Get("orderBy"); o != "" && o != "name" {
		return nil, "", errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'orderBy': '%s'. gcpfake sorts by name only.", o)
	}
	// Per the compute v1 reference (maxResults): "Acceptable values are 0 to 500, inclusive.
	// (Default: 500)".
	limit := 500
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 500 {
			return nil, "", errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'maxResults': '%s'. Must be between 0 and 500.", v)
		}
		if n > 0 {
			limit = n
		}
	}
	if tok := q.Get("pageToken"); tok != "" {
		after, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return nil, "", errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'pageToken': '%s'.", tok)
		}
		i := sort.Search(len(entries), func(i int) bool { return entries[i].key > string(after) })
		entries = entries[i:]
	}
	if len(entries) <= limit {
		return entries, "", nil
	}
	return entries[:limit], base64.RawURLEncoding.EncodeToString([]byte(entries[limit-1].key)), nil
}

var (
	// "field eq|ne value": value is an RE2 matched against the whole field.
	reFilter = regexp.MustCompile(`^([A-Za-z][\w.]*)\s+(eq|ne)\s+(.+)$`)
	// "field = value" or "field != value": literal comparison.
	litFilter = regexp.MustCompile(`^([A-Za-z][\w.]*)\s*(=|!=)\s*(.+)$`)
)

// parseFilter supports the filter forms of the compute v1 list reference that the provider uses:
// "field eq RE2" / "field ne RE2" ("The literal value must match the entire field"), "field =
// literal" / "field != literal", values quoted with " or ' or bare, dotted fields (labels.owner),
// and parenthesized expressions, ANDed ("(a) (b)" or "(a) AND (b)"). The two kinds "cannot be
// mixed in one request". Anything else (OR, ":", "<", …) is refused with 400 rather than
// silently matching.
func parseFilter(f string) (func(map[string]any) bool, *apiError) {
	invalid := errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'filter': '%s'. gcpfake supports eq/ne or =/!= expressions (not mixed) joined by AND.", f)
	terms, ok := splitTerms(f)
	if !ok {
		return nil, invalid
	}
	var preds []func(map[string]any) bool
	var regex, literal bool
	for _, t := range terms {
		t = strings.TrimSpace(t)
		if m := reFilter.FindStringSubmatch(t); m != nil {
			re, err := regexp.Compile("^(?:" + unquote(m[3]) + ")$")
			if err != nil {
				return nil, invalid
			}
			field, want := m[1], m[2] == "eq"
			preds, regex = append(preds, func(obj map[string]any) bool { return re.MatchString(fieldOf(obj, field)) == want }), true
			continue
		}
		if m := litFilter.FindStringSubmatch(t); m != nil {
			field, lit, want := m[1], unquote(m[3]), m[2] == "="
			preds, literal = append(preds, func(obj map[string]any) bool { return (fieldOf(obj, field) == lit) == want }), true
			continue
		}
		return nil, invalid
	}
	if regex && literal {
		return nil, invalid
	}
	return func(obj map[string]any) bool {
		for _, p := range preds {
			if !p(obj) {
				return false
			}
		}
		return true
	}, nil
}

// splitTerms splits "(a) (b)" or "(a) AND (b)" into a and b, and a lone expression into itself.
// Parentheses inside quotes or nested in a term (an RE2 group) do not end it.
func splitTerms(f string) ([]string, bool) {
	rest := strings.TrimSpace(f)
	if !strings.HasPrefix(rest, "(") {
		return []string{rest}, rest != ""
	}
	var terms []string
	for rest != "" {
		if rest[0] != '(' {
			return nil, false
		}
		depth, quote, end := 0, byte(0), -1
		for i := 0; i < len(rest) && end < 0; i++ {
			switch c := rest[i]; {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '(':
				depth++
			case c == ')':
				if depth--; depth == 0 {
					end = i
				}
			}
		}
		if end < 0 {
			return nil, false
		}
		terms = append(terms, rest[1:end])
		rest = strings.TrimSpace(rest[end+1:])
		if after, ok := strings.CutPrefix(rest, "AND "); ok {
			rest = strings.TrimSpace(after)
		}
	}
	return terms, true
}

func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// fieldOf reads a dotted field of a proto-JSON object as text; a missing field is "".
func fieldOf(obj map[string]any, path string) string {
	var v any = obj
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}
