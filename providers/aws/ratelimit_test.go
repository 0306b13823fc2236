package aws

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

const serviceELB = "Elastic Load Balancing v2"

// TestRateLimiterLimits: every call of an account, whatever the service and whichever gateway
// makes it, takes a token of one bucket: N calls at q per second with a burst of b take at least
// (N-b)/q. Only that lower bound is asserted; moto's own speed makes no upper one reliable.
func TestRateLimiterLimits(t *testing.T) {
	srv := mototest.Require(t, moto)
	ctx := motoContext(t)
	warmUp(t, srv.URL)
	const qps, burst, calls = 5.0, 1, 11
	a := testAccounts(accountOptions{QPS: qps, Burst: burst})
	o := motoOptions(t, srv.URL, testKeys)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := range calls {
		wg.Go(func() {
			// Each call asks for the clients, as each gateway's reconcile does.
			c, err := a.clients(ctx, o)
			if err != nil {
				errs <- err
				return
			}
			if i%2 == 0 {
				_, err = c.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
			} else {
				_, err = c.ELB.DescribeLoadBalancers(ctx, &elasticloadbalancingv2.DescribeLoadBalancersInput{})
			}
			errs <- err
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d calls in %v", calls, elapsed)
	if min := time.Duration(float64(calls-burst) / qps * float64(time.Second)); elapsed < min {
		t.Errorf("%d calls took %v, want at least %v at %v/s with burst %d", calls, elapsed, min, qps, burst)
	}
	if waited := counterValue(t, a.metrics.limited); waited <= 0 {
		t.Errorf("fleetgate_aws_rate_limited_seconds_total = %v, want > 0", waited)
	}
	other, err := a.clients(ctx, motoOptions(t, srv.URL, testKeys+`,"region":"us-west-2"`))
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := a.clients(ctx, o); other.limiter == c.limiter {
		t.Error("another region shares the bucket")
	}
}

// TestRateLimiterCoversRetries: a retried attempt takes a token too, so a throttled account is
// not hit harder by the retries: 3 attempts with a burst of 1 at q per second take at least 2/q.
func TestRateLimiterCoversRetries(t *testing.T) {
	srv := mototest.Require(t, moto)
	t.Parallel()
	ctx := motoContext(t)
	shim := faultShim(t, srv.URL, "DescribeLoadBalancers", 2, 400,
		`<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>`)
	warmUp(t, srv.URL)
	const qps = 5.0
	a := testAccounts(accountOptions{QPS: qps, Burst: 1, MaxAttempts: 3})
	c, err := a.clients(ctx, motoOptions(t, shim, testKeys))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.ELB.DescribeLoadBalancers(ctx, &elasticloadbalancingv2.DescribeLoadBalancersInput{}); err != nil {
		t.Fatal(err)
	}
	if elapsed, min := time.Since(start), time.Duration(2/qps*float64(time.Second)); elapsed < min {
		t.Errorf("3 attempts took %v, want at least %v", elapsed, min)
	}
}

// warmUp makes moto load its EC2 and ELB backends, which it does on their first call (EC2: over a
// second), so that timed tests do not time that.
func warmUp(t *testing.T, endpoint string) {
	t.Helper()
	cfg, err := mototest.Config(t.Context(), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ec2.NewFromConfig(cfg).DescribeVpcs(t.Context(), &ec2.DescribeVpcsInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := elasticloadbalancingv2.NewFromConfig(cfg).DescribeLoadBalancers(t.Context(), &elasticloadbalancingv2.DescribeLoadBalancersInput{}); err != nil {
		t.Fatal(err)
	}
}

// TestRetries: throttling and 5xx answers are retried with backoff and counted; other errors are
// not retried; the calls metric has the final code.
func TestRetries(t *testing.T) {
	srv := mototest.Require(t, moto)
	const throttling = `<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"><Error><Type>Sender</Type>` +
		`<Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>r</RequestId></ErrorResponse>`
	const validation = `<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code><Message>bad</Message></Error></ErrorResponse>`
	const limitExceeded = `<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>r</RequestID></Response>`
	tests := []struct {
		name     string
		service  string
		status   int
		body     string
		failures int
		// wantCode is the final code ("" success); wantRetries the attempts after the first.
		wantCode    string
		wantRetries float64
	}{
		{name: "ELB throttling twice", service: serviceELB, status: 400, body: throttling, failures: 2, wantRetries: 2},
		{name: "ELB throttling beyond the attempts", service: serviceELB, status: 400, body: throttling, failures: 10, wantCode: "Throttling", wantRetries: 2},
		{name: "EC2 request limit", service: "EC2", status: 503, body: limitExceeded, failures: 1, wantRetries: 1},
		{name: "EC2 HTML 500", service: "EC2", status: 500, body: "<html>oops</html>", failures: 2, wantRetries: 2},
		{name: "ELB validation is not retried", service: serviceELB, status: 400, body: validation, failures: 1, wantCode: "ValidationError"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := motoContext(t)
			action := map[string]string{serviceELB: "DescribeLoadBalancers", "EC2": "DescribeVpcs"}[tc.service]
			shim := faultShim(t, srv.URL, action, tc.failures, tc.status, tc.body)
			a := testAccounts(accountOptions{MaxAttempts: 3})
			c, err := a.clients(ctx, motoOptions(t, shim, testKeys))
			if err != nil {
				t.Fatal(err)
			}
			if tc.service == "EC2" {
				_, err = c.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
			} else {
				_, err = c.ELB.DescribeLoadBalancers(ctx, &elasticloadbalancingv2.DescribeLoadBalancersInput{})
			}
			if got := errorCode(err); got != tc.wantCode || (tc.wantCode == "") != (err == nil) {
				t.Fatalf("%s: error %v (code %q), want code %q", action, err, got, tc.wantCode)
			}
			if n := counterValue(t, a.metrics.calls.WithLabelValues(tc.service, action, tc.wantCode)); n != 1 {
				t.Errorf("fleetgate_aws_api_calls_total{%s,%s,%q} = %v, want 1", tc.service, action, tc.wantCode, n)
			}
			if n := counterValue(t, a.metrics.retries.WithLabelValues(tc.service, action)); n != tc.wantRetries {
				t.Errorf("fleetgate_aws_api_retries_total{%s,%s} = %v, want %v", tc.service, action, n, tc.wantRetries)
			}
		})
	}
}

// faultShim is a proxy to target that answers the first failures calls of action with status and
// body, as AWS does when it throttles.
func faultShim(t *testing.T, target, action string, failures, status int, body string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	var left atomic.Int32
	left.Store(int32(failures))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		if strings.HasPrefix(string(b), "Action="+action+"&") && left.Add(-1) >= 0 {
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s.URL
}
