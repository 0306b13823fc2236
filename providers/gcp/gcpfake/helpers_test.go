package gcpfake_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/fleetgate/fleetgate/providers/gcp/gcpfake"
)

const (
	project = "proj"
	region  = "us-central1"
	zone    = "us-central1-a"
)

// env is a fake with the real apiv1 REST clients pointed at it.
type env struct {
	t   *testing.T
	ctx context.Context
	srv *gcpfake.Server

	addr  *compute.AddressesClient
	gaddr *compute.GlobalAddressesClient
	fr    *compute.ForwardingRulesClient
	gfr   *compute.GlobalForwardingRulesClient
	hp    *compute.TargetHttpProxiesClient
	rhp   *compute.RegionTargetHttpProxiesClient
	sp    *compute.TargetHttpsProxiesClient
	rsp   *compute.RegionTargetHttpsProxiesClient
	um    *compute.UrlMapsClient
	rum   *compute.RegionUrlMapsClient
	bs    *compute.BackendServicesClient
	rbs   *compute.RegionBackendServicesClient
	hc    *compute.HealthChecksClient
	rhc   *compute.RegionHealthChecksClient
	cert  *compute.SslCertificatesClient
	rcert *compute.RegionSslCertificatesClient
	neg   *compute.NetworkEndpointGroupsClient
}

// mk unwraps a client constructor; with a fixed endpoint and no credentials they do not fail.
func mk[C any](c C, err error) C {
	if err != nil {
		panic(err)
	}
	return c
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := gcpfake.NewServer(t)
	ctx, o := t.Context(), srv.ClientOptions()
	return &env{
		t: t, ctx: ctx, srv: srv,
		addr: mk(compute.NewAddressesRESTClient(ctx, o...)), gaddr: mk(compute.NewGlobalAddressesRESTClient(ctx, o...)),
		fr: mk(compute.NewForwardingRulesRESTClient(ctx, o...)), gfr: mk(compute.NewGlobalForwardingRulesRESTClient(ctx, o...)),
		hp: mk(compute.NewTargetHttpProxiesRESTClient(ctx, o...)), rhp: mk(compute.NewRegionTargetHttpProxiesRESTClient(ctx, o...)),
		sp: mk(compute.NewTargetHttpsProxiesRESTClient(ctx, o...)), rsp: mk(compute.NewRegionTargetHttpsProxiesRESTClient(ctx, o...)),
		um: mk(compute.NewUrlMapsRESTClient(ctx, o...)), rum: mk(compute.NewRegionUrlMapsRESTClient(ctx, o...)),
		bs: mk(compute.NewBackendServicesRESTClient(ctx, o...)), rbs: mk(compute.NewRegionBackendServicesRESTClient(ctx, o...)),
		hc: mk(compute.NewHealthChecksRESTClient(ctx, o...)), rhc: mk(compute.NewRegionHealthChecksRESTClient(ctx, o...)),
		cert: mk(compute.NewSslCertificatesRESTClient(ctx, o...)), rcert: mk(compute.NewRegionSslCertificatesRESTClient(ctx, o...)),
		neg: mk(compute.NewNetworkEndpointGroupsRESTClient(ctx, o...)),
	}
}

// do waits for a mutation and fails the test unless it succeeded.
func (e *env) do(op *compute.Operation, err error) *computepb.Operation {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("call: %v", err)
	}
	if err := op.Wait(e.ctx); err != nil {
		e.t.Fatalf("wait: %v", err)
	}
	if oe := op.Proto().GetError(); oe != nil {
		e.t.Fatalf("operation failed: %v", oe)
	}
	return op.Proto()
}

// apiErr returns the HTTP status and first reason ("" if none) of a *googleapi.Error, or 0, "" for nil.
func apiErr(t *testing.T, err error) (int, string) {
	t.Helper()
	if err == nil {
		return 0, ""
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v is not a *googleapi.Error", err)
	}
	if len(ge.Errors) == 0 {
		return ge.Code, ""
	}
	return ge.Code, ge.Errors[0].Reason
}

// names drains a list iterator.
func names[T interface{ GetName() string }](t *testing.T, next func() (T, error)) []string {
	t.Helper()
	var out []string
	for {
		v, err := next()
		if errors.Is(err, iterator.Done) {
			return out
		}
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		out = append(out, v.GetName())
	}
}

// selfSigned returns a PEM certificate for host and its PEM private key.
func selfSigned(t *testing.T, host string) (string, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host}, NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}))
}
