package aws

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

// moto serves every test of the package that calls AWS; tests that share it either reset it (and
// do not run in parallel) or keep to a VPC of their own.
var moto *mototest.Server

func TestMain(m *testing.M) {
	if endpoint := os.Getenv(envKillChild); endpoint != "" {
		os.Exit(runKillChild(endpoint)) // the kill test's child (kill_test.go)
	}
	os.Exit(mototest.Main(m, &moto))
}

// motoOptions are a class's options pointing at moto, with extra JSON fields.
func motoOptions(t *testing.T, endpoint, extra string) v1alpha1.AWSOptions {
	t.Helper()
	params := `{"endpoint":"` + endpoint + `"` + extra + `}`
	o, err := decodeOptions([]byte(params), v1alpha1.AWSOptions{Region: mototest.Region})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// testKeys are static keys of a Secret test/aws for the cases without credentials of their own:
// moto takes any keys, and the operator's own chain would look for an instance role.
const testKeys = `,"credentials":{"secretRef":{"namespace":"test","name":"aws"}}`

// testAccounts are accounts with fast retries, a fresh metrics registry and o's other settings;
// without a Secrets reader of its own, Secrets hold test keys.
func testAccounts(o accountOptions) *accounts {
	if o.Secrets == nil {
		o.Secrets = func(context.Context, string, string) (map[string][]byte, error) {
			return map[string][]byte{"access-key-id": []byte("AKIDTEST"), "secret-access-key": []byte("test")}, nil
		}
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 5 * time.Millisecond
	}
	o.Registerer = prometheus.NewRegistry()
	return newAccounts(o)
}

// recorder is an HTTP client that remembers what it sent to AWS, for what moto does not show
// (which credentials signed a call, what an STS call carried).
type recorder struct {
	mu    sync.Mutex
	calls []recordedCall
}

type recordedCall struct {
	// Service is the signing scope's service ("ec2", "sts", …), AccessKey the signing key: both
	// "" for unsigned calls.
	Service, AccessKey string
	Action             string
	Body               string
	// Took is the call's round trip, for benchmarks that say where an Ensure's time goes.
	Took time.Duration
}

var credentialScope = regexp.MustCompile(`Credential=([^/]+)/[^/]+/[^/]+/([^/]+)/`)

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	call := recordedCall{Body: string(body)}
	if m := credentialScope.FindStringSubmatch(req.Header.Get("Authorization")); m != nil {
		call.AccessKey, call.Service = m[1], m[2]
	}
	if target := req.Header.Get("X-Amz-Target"); target != "" {
		call.Action = target[strings.LastIndex(target, ".")+1:]
	} else if m := regexp.MustCompile(`(?:^|&)Action=([A-Za-z]+)`).FindStringSubmatch(call.Body); m != nil {
		call.Action = m[1]
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	call.Took = time.Since(start)
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
	return resp, err
}

// find returns the recorded calls of action.
func (r *recorder) find(action string) []recordedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recordedCall
	for _, c := range r.calls {
		if c.Action == action {
			out = append(out, c)
		}
	}
	return out
}

func motoContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// counterValue reads a counter.
func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
