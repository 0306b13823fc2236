package gcpfake

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Call is one request the fake received, in the request log.
type Call struct {
	Method string
	Path   string // e.g. /compute/v1/projects/p/global/urlMaps
	Query  url.Values
	Body   []byte
	Status int // HTTP status the fake answered
}

// Mutating reports whether the call asks for a change. listNetworkEndpoints is a POST that only
// reads (reference: "Lists the network endpoints in the specified network endpoint group"), so it
// does not count.
func (c Call) Mutating() bool {
	return c.Method != http.MethodGet && !strings.HasSuffix(c.Path, "/listNetworkEndpoints")
}

// Calls returns the request log, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Mutations returns the mutating calls of the request log (see Call.Mutating), failed ones included.
func (s *Server) Mutations() []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Mutating() {
			out = append(out, c)
		}
	}
	return out
}

// ResetCalls empties the request log.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// Fault is a failure the fake returns instead of serving a call. A faulted call changes nothing.
type Fault struct {
	Code    int    // HTTP status, e.g. 429, 503, 412
	Reason  string // errors[0].reason, e.g. "rateLimitExceeded"; in an operation, errors[0].code
	Message string // optional; defaults to the status text
	// InOperation delivers the fault in a DONE Operation instead of as an HTTP error; it matches
	// mutations only.
	InOperation bool
	// WithHTTPStatus sets the operation's httpErrorStatusCode and httpErrorMessage. Without them the
	// apiv1 client's op.Wait returns nil and only op.Proto().GetError() shows the failure.
	WithHTTPStatus bool
}

func (f *Fault) message() string {
	if f.Message != "" {
		return f.Message
	}
	return http.StatusText(f.Code)
}

type fault struct {
	match func(Call) bool
	Fault
	times int
}

type faultRate struct {
	rate float64
	rng  *rand.Rand
}

// Inject makes the next times calls for which match returns true fail with f. Faults are tried
// in the order they were injected; match sees the call without its Status.
func (s *Server) Inject(match func(Call) bool, f Fault, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{match: match, Fault: f, times: times})
}

// FailNext makes the next times calls with this HTTP method whose path ends in pathSuffix fail with
// an HTTP error (MockGCE style), e.g. FailNext("POST", "/global/urlMaps", 503, "backendError", 1).
func (s *Server) FailNext(method, pathSuffix string, code int, reason string, times int) {
	s.Inject(func(c Call) bool {
		return c.Method == method && strings.HasSuffix(c.Path, pathSuffix)
	}, Fault{Code: code, Reason: reason}, times)
}

// SetFaultRate fails that share of all calls, operation polls included, (after the injected
// faults) with 429 rateLimitExceeded or 503 backendError, drawn from a generator seeded with seed.
// 0 turns it off.
func (s *Server) SetFaultRate(rate float64, seed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rate = nil
	if rate > 0 {
		s.rate = &faultRate{rate: rate, rng: rand.New(rand.NewPCG(uint64(seed), 0))} //nolint:gosec // deterministic faults, not security
	}
}

// injected returns the HTTP error an injected fault or the fault rate gives call, if any.
func (s *Server) injected(call *Call) *apiError {
	if f := s.takeFault(call, false); f != nil {
		return errorf(f.Code, f.Reason, "%s", f.message())
	}
	if s.rate != nil && s.rate.rng.Float64() < s.rate.rate {
		if s.rate.rng.IntN(2) == 0 {
			return errorf(http.StatusTooManyRequests, "rateLimitExceeded", "Rate Limit Exceeded")
		}
		return errorf(http.StatusServiceUnavailable, "backendError", "Backend Error")
	}
	return nil
}

// operationFault returns the operation fault a mutation should end with, if any.
func (s *Server) operationFault(call *Call) *Fault {
	return s.takeFault(call, true)
}

func (s *Server) takeFault(call *Call, inOperation bool) *Fault {
	for i, f := range s.faults {
		if f.InOperation != inOperation || !f.match(*call) {
			continue
		}
		f.times--
		if f.times <= 0 {
			s.faults = slices.Delete(s.faults, i, i+1)
		}
		return &f.Fault
	}
	return nil
}

// apiError is an HTTP error in the shape of the compute API, which the client surfaces as a
// *googleapi.Error with Code and Errors[0].Reason.
type apiError struct {
	code    int
	reason  string
	message string
}

func errorf(code int, reason, format string, args ...any) *apiError {
	return &apiError{code: code, reason: reason, message: fmt.Sprintf(format, args...)}
}

func notFoundError(key string) *apiError {
	return errorf(http.StatusNotFound, "notFound", "The resource '%s' was not found", key)
}

func staleFingerprint(field string) *apiError {
	return errorf(http.StatusPreconditionFailed, "conditionNotMet", "Invalid fingerprint. Supply the current %s.", field)
}

func (e *apiError) response() (int, []byte) {
	item := map[string]string{"domain": "global", "reason": e.reason, "message": e.message}
	out, err := json.Marshal(map[string]any{"error": map[string]any{"code": e.code, "message": e.message, "errors": []any{item}}})
	if err != nil {
		return http.StatusInternalServerError, nil
	}
	return e.code, out
}
