package mototest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Faults is an HTTP shim in front of moto: it records every request and answers chosen ones with
// AWS errors moto never returns (throttling, 5xx, refusals such as ResourceInUse), in the wire
// shape of each service's protocol so that the SDK decodes them as it would AWS's. Point the SDK
// at URL() instead of the moto server. Safe for concurrent use.
type Faults struct {
	srv   *httptest.Server
	proxy *httputil.ReverseProxy

	mu    sync.Mutex
	rules []*faultRule
	rnd   *rand.Rand
	calls []Request
}

// Request is one recorded call.
type Request struct {
	// Service is the SigV4 signing name: "elasticloadbalancing", "ec2", "acm", "sts".
	Service string
	// AccessKey is the access key ID that signed it, "" for an unsigned call.
	AccessKey string
	// Action is the operation: the awsQuery form's Action, or the X-Amz-Target operation of a
	// JSON service.
	Action string
	// Body is the raw request body; Form is it parsed, for the query protocols (ELBv2, EC2).
	Body string
	Form url.Values
	// Injected is the code of the fault the shim answered with, "" when moto answered.
	Injected string
}

// Mutating tells whether the call may change state: everything but Describe*, List* and Get*.
func (r Request) Mutating() bool {
	for _, p := range []string{"Describe", "List", "Get"} {
		if strings.HasPrefix(r.Action, p) {
			return false
		}
	}
	return true
}

// Fault is an AWS error answered instead of moto's response.
type Fault struct {
	Status  int
	Code    string
	Message string
}

// Throttling is ELBv2's (and most services') rate-limit error.
func Throttling() Fault { return Fault{http.StatusBadRequest, "Throttling", "Rate exceeded"} }

// RequestLimitExceeded is EC2's rate-limit error.
func RequestLimitExceeded() Fault {
	return Fault{http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded."}
}

// ServerError is a 5xx (500 InternalFailure, 503 ServiceUnavailable, ...).
func ServerError(status int) Fault {
	code := "InternalFailure"
	if status == http.StatusServiceUnavailable {
		code = "ServiceUnavailable"
	}
	return Fault{status, code, http.StatusText(status)}
}

// ResourceInUse is ELBv2's refusal to delete a target group a listener or rule still uses.
func ResourceInUse() Fault {
	return Fault{http.StatusBadRequest, "ResourceInUse", "Target group is currently in use by a listener or a rule"}
}

// DependencyViolation is EC2's refusal to delete a security group a load balancer still uses.
func DependencyViolation() Fault {
	return Fault{http.StatusBadRequest, "DependencyViolation", "resource has a dependent object"}
}

// OperationNotPermitted is ELBv2's refusal to delete a load balancer with deletion protection.
func OperationNotPermitted() Fault {
	return Fault{http.StatusBadRequest, "OperationNotPermitted", "Load balancer is protected from deletion"}
}

// ResourceInUseException is ACM's refusal to delete a certificate a listener still uses.
func ResourceInUseException() Fault {
	return Fault{http.StatusBadRequest, "ResourceInUseException", "Certificate is in use"}
}

// InvalidClientTokenId is the refusal of an access key AWS does not know (STS, ELBv2, ACM).
func InvalidClientTokenId() Fault {
	return Fault{http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid."}
}

// AccessDenied is ELBv2's (and STS's) refusal of a call the caller's policies do not allow.
func AccessDenied(action string) Fault {
	return Fault{http.StatusForbidden, "AccessDenied", "User is not authorized to perform: " + action}
}

// Rule says which calls fail with which fault.
type Rule struct {
	// AccessKey, when set, limits it to calls signed with this access key ID: keys AWS rejects
	// while other keys keep working, as moto accepts any.
	AccessKey string
	// Service, when set, limits it to one service (Request.Service: "ec2" and ELBv2 both have
	// DescribeTags).
	Service string
	// Actions are the actions it applies to; empty applies to every call.
	Actions []string
	// Match, when set, narrows it to the calls it accepts (e.g. by a form field).
	Match func(Request) bool
	Fault Fault
	// First fails the first First calls it applies to, then lets them pass. When 0, Rate is the
	// probability that a call fails, drawn from the shim's seeded source (Seed).
	First int
	Rate  float64
	// Applied lets moto carry the call out before the fault is answered: a response lost after
	// AWS acted (a timeout, a proxy's 5xx), which the SDK's retry of a create may duplicate.
	Applied bool
}

type faultRule struct {
	Rule
	left int
}

// NewFaults starts a shim in front of the moto server at target. Close it with Close.
func NewFaults(target string) *Faults {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		panic(fmt.Sprintf("mototest: bad moto URL %q", target))
	}
	f := &Faults{
		proxy: &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }},
		rnd:   rand.New(rand.NewPCG(1, 1)),
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// URL is the shim's endpoint, for config.WithBaseEndpoint (or Config).
func (f *Faults) URL() string { return f.srv.URL }

// Close stops the shim.
func (f *Faults) Close() { f.srv.Close() }

// Seed makes the Rate draws repeat: the same seed and the same calls fail the same calls.
func (f *Faults) Seed(seed uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rnd = rand.New(rand.NewPCG(seed, seed))
}

// Fail adds a rule; earlier rules are tried first.
func (f *Faults) Fail(r Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &faultRule{Rule: r, left: r.First})
}

// Reset drops the rules and the recorded calls.
func (f *Faults) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules, f.calls = nil, nil
}

// Calls returns the recorded calls of action, oldest first.
func (f *Faults) Calls(action string) []Request {
	return f.filter(func(r Request) bool { return r.Action == action })
}

// Count counts the recorded calls filter accepts (every call when nil).
func (f *Faults) Count(filter func(Request) bool) int {
	return len(f.filter(filter))
}

// Counts returns the number of mutating and of read calls recorded (Request.Mutating).
func (f *Faults) Counts() (mutating, reads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.calls {
		if r.Mutating() {
			mutating++
		} else {
			reads++
		}
	}
	return mutating, reads
}

func (f *Faults) filter(keep func(Request) bool) []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Request
	for _, r := range f.calls {
		if keep == nil || keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func (f *Faults) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	auth := r.Header.Get("Authorization")
	req := Request{Service: signingName(auth), AccessKey: accessKey(auth), Body: string(body)}
	target := r.Header.Get("X-Amz-Target")
	if target != "" {
		req.Action = target[strings.LastIndex(target, ".")+1:]
	} else if req.Form, err = url.ParseQuery(string(body)); err == nil {
		req.Action = req.Form.Get("Action")
	}
	rule, ok := f.decide(&req)
	if !ok {
		f.proxy.ServeHTTP(w, r)
		return
	}
	if rule.Applied {
		f.proxy.ServeHTTP(httptest.NewRecorder(), r)
	}
	fault := rule.Fault
	w.Header().Set("X-Amzn-RequestId", requestID)
	switch {
	case target != "":
		writeJSONError(w, fault)
	case req.Service == "ec2":
		writeEC2Error(w, fault)
	default:
		writeQueryError(w, fault)
	}
}

// decide records req and picks the rule that fails it, if any.
func (f *Faults) decide(req *Request) (Rule, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer func() { f.calls = append(f.calls, *req) }()
	for _, rule := range f.rules {
		if (rule.Service != "" && rule.Service != req.Service) || (len(rule.Actions) > 0 && !slices.Contains(rule.Actions, req.Action)) ||
			(rule.AccessKey != "" && rule.AccessKey != req.AccessKey) || (rule.Match != nil && !rule.Match(*req)) {
			continue
		}
		fail := false
		if rule.First > 0 {
			fail = rule.left > 0
			rule.left--
		} else {
			fail = f.rnd.Float64() < rule.Rate
		}
		if fail {
			req.Injected = rule.Fault.Code
			return rule.Rule, true
		}
	}
	return Rule{}, false
}

// signingName is the service of a SigV4 Authorization header's credential scope
// ("Credential=AKID/date/region/service/aws4_request").
func signingName(auth string) string {
	if parts := credentialScope(auth); len(parts) == 5 {
		return parts[3]
	}
	return ""
}

// accessKey is the access key ID that signed a SigV4 Authorization header.
func accessKey(auth string) string {
	if parts := credentialScope(auth); len(parts) == 5 {
		return parts[0]
	}
	return ""
}

func credentialScope(auth string) []string {
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return nil
	}
	cred, _, _ = strings.Cut(cred, ",")
	return strings.Split(cred, "/")
}

const requestID = "00000000-0000-0000-0000-00000000fa17"

// writeQueryError answers in the awsQuery shape (ELBv2, STS).
func writeQueryError(w http.ResponseWriter, f Fault) {
	typ := "Sender"
	if f.Status >= 500 {
		typ = "Receiver"
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(f.Status)
	_, _ = fmt.Fprintf(w, `<ErrorResponse><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
		typ, html.EscapeString(f.Code), html.EscapeString(f.Message), requestID)
}

// writeEC2Error answers in EC2's query shape.
func writeEC2Error(w http.ResponseWriter, f Fault) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(f.Status)
	_, _ = fmt.Fprintf(w, `<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>`,
		html.EscapeString(f.Code), html.EscapeString(f.Message), requestID)
}

// writeJSONError answers in the awsJson shape (ACM).
func writeJSONError(w http.ResponseWriter, f Fault) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(f.Status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": f.Code, "message": f.Message})
}
