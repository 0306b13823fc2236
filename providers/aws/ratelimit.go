package aws

import (
	"context"
	"errors"
	"fmt"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// codeClientError is the calls metric's code of a call that got no answer from AWS (a transport
// error, a canceled context, a rate-limit wait past the deadline); "" is success.
const codeClientError = "ClientError"

// apiMetrics count the provider's AWS API calls.
type apiMetrics struct {
	calls   *prometheus.CounterVec
	retries *prometheus.CounterVec
	limited prometheus.Counter
}

// newAPIMetrics registers the metrics on reg (none when nil). An existing registration of the same
// metrics (a second provider on one registry) is shared.
func newAPIMetrics(reg prometheus.Registerer) (*apiMetrics, error) {
	m := &apiMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetgate_aws_api_calls_total",
			Help: "AWS API calls by service, operation and final error code (empty: success), retries included in one call.",
		}, []string{"service", "operation", "code"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetgate_aws_api_retries_total",
			Help: "AWS API attempts beyond the first of a call (throttling, 5xx), by service and operation.",
		}, []string{"service", "operation"}),
		limited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fleetgate_aws_rate_limited_seconds_total",
			Help: "Seconds AWS API attempts waited for the client-side rate limiter of their account and region.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	var errs [3]error
	m.calls, errs[0] = register(reg, m.calls)
	m.retries, errs[1] = register(reg, m.retries)
	m.limited, errs[2] = register(reg, m.limited)
	return m, errors.Join(errs[:]...)
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	if err != nil {
		return c, fmt.Errorf("registering AWS API metrics: %w", err)
	}
	return c, nil
}

// apiOptions put the metrics around the SDK's retry loop and the account's token bucket inside it,
// so that every attempt, retries included, takes a token and a throttled account slows down.
func (m *apiMetrics) apiOptions(lim *rate.Limiter) []func(*middleware.Stack) error {
	return []func(*middleware.Stack) error{func(s *middleware.Stack) error {
		if err := s.Finalize.Insert(m.countCalls(), "Retry", middleware.Before); err != nil {
			return fmt.Errorf("adding the AWS API metrics: %w", err)
		}
		if err := s.Finalize.Insert(m.limit(lim), "Retry", middleware.After); err != nil {
			return fmt.Errorf("adding the AWS API rate limiter: %w", err)
		}
		return nil
	}}
}

func (m *apiMetrics) countCalls() middleware.FinalizeMiddleware {
	return middleware.FinalizeMiddlewareFunc("fleetgate.CountCalls", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleFinalize(ctx, in)
		service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
		if res, ok := retry.GetAttemptResults(md); ok && len(res.Results) > 1 {
			m.retries.WithLabelValues(service, op).Add(float64(len(res.Results) - 1))
		}
		code := errorCode(err)
		if err != nil && code == "" {
			code = codeClientError
		}
		m.calls.WithLabelValues(service, op, code).Inc()
		return out, md, err
	})
}

func (m *apiMetrics) limit(lim *rate.Limiter) middleware.FinalizeMiddleware {
	return middleware.FinalizeMiddlewareFunc("fleetgate.RateLimit", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		if err := m.wait(ctx, lim); err != nil {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, err
		}
		return next.HandleFinalize(ctx, in)
	})
}

// wait takes a token of lim, waiting for it as long as ctx allows, and counts the wait.
func (m *apiMetrics) wait(ctx context.Context, lim *rate.Limiter) error {
	r := lim.Reserve()
	if !r.OK() {
		return errors.New("the account's AWS API rate limiter allows no call (burst 0)")
	}
	d := r.Delay()
	if d == 0 {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		r.Cancel()
		return fmt.Errorf("the account's AWS API rate limit needs a wait of %v, past the deadline", d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		r.Cancel()
		return fmt.Errorf("waiting for the account's AWS API rate limit: %w", ctx.Err())
	case <-t.C:
	}
	m.limited.Add(d.Seconds())
	return nil
}

// newRetryer is the SDK's standard retryer (exponential backoff with jitter on throttling codes,
// 5xx and transport errors) without its retry quota: the account's token bucket already paces
// every attempt, and the quota would fail calls outright after a burst of throttling.
func newRetryer(maxAttempts int, maxBackoff time.Duration) func() awssdk.Retryer {
	return func() awssdk.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.MaxBackoff = maxBackoff
			o.RateLimiter = ratelimit.None
		})
	}
}
