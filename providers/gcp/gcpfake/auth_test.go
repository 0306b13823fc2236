package gcpfake

import (
	"context"
	"errors"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

// TestAuth drives the real auth path: a service account key whose token_uri is the fake gets a
// token through the JWT-bearer grant and the call goes through; no credentials get 401; a
// revoked key gets no token.
func TestAuth(t *testing.T) {
	s := NewServer(t)
	s.RequireAuth()
	key, err := s.NewServiceAccountKey("p", "fg@p.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	get := func(opts ...option.ClientOption) error {
		c, err := compute.NewHealthChecksRESTClient(ctx, append(opts, option.WithEndpoint(s.URL()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.Get(ctx, &computepb.GetHealthCheckRequest{Project: "p", HealthCheck: "missing"})
		return err
	}
	// Authorized: the fake answers the call itself (404 for a missing health check).
	if err := get(option.WithAuthCredentialsJSON(option.ServiceAccount, key)); !isCode(err, 404) {
		t.Errorf("with the key: %v, want the API's 404", err)
	}
	if err := get(option.WithoutAuthentication()); !isCode(err, 401) {
		t.Errorf("without credentials: %v, want 401", err)
	}
	s.Revoke("fg@p.iam.gserviceaccount.com")
	if err := get(option.WithAuthCredentialsJSON(option.ServiceAccount, key)); err == nil || isCode(err, 404) {
		t.Errorf("with a revoked key: %v, want the token exchange to fail", err)
	}
}

func isCode(err error, code int) bool {
	ge, ok := errors.AsType[*googleapi.Error](err)
	return ok && ge.Code == code
}
