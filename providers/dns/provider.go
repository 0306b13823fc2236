package dns

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns"
	"sigs.k8s.io/external-dns/provider"
	"sigs.k8s.io/external-dns/provider/aws"
	"sigs.k8s.io/external-dns/provider/google"
	"sigs.k8s.io/external-dns/provider/rfc2136"
	"sigs.k8s.io/external-dns/registry"
	"sigs.k8s.io/external-dns/registry/txt"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// A record and its TXT ownership record must travel in the same DNS UPDATE message, which the
// server applies atomically, so that a publisher killed mid-pass leaves no record without its
// owner (nor the reverse). The TXT registry appends the ownership records after the records, so
// Sync hands it at most applyChunk records of each kind at a time, and one message takes all
// of them with their TXT records (and stays well under DNS's 64 KiB message limit).
const (
	applyChunk       = 100
	rfc2136BatchSize = 2 * applyChunk
)

// Cloud DNS applies one change (additions and deletions) atomically, and takes up to 1,000 of
// each and 100,000 bytes of record data ("Additions per change", "Deletions per change",
// "Resource record data size per change" in its quotas and limits). A Sync chunk for Cloud DNS
// holds googleChunk records of each kind: with their TXT records and an update's old and new
// ones at most 8*googleChunk record sets, so with external-dns's batch size (which counts both
// kinds together) at 1,000 a chunk is one change per zone — a record and its ownership record
// land together or not at all — and its data stays under 100,000 bytes even with ownership
// records of ~900 bytes (long gateway keys), where a chunk of applyChunk could exceed it at ~230.
// No pause between changes: one pass sends one change per zone per chunk.
const (
	googleChunk           = 25
	googleBatchChangeSize = 1000
	googleCallTimeout     = 30 * time.Second
)

// chunkOf is how many records of each kind one Sync chunk hands the provider.
func chunkOf(p v1alpha1.DNSProvider) int {
	if p == v1alpha1.DNSProviderGoogle {
		return googleChunk
	}
	return applyChunk
}

// newProvider builds external-dns's provider for the class, and tells whether it has weighted
// records (set identifiers).
func newProvider(ctx context.Context, o Options, filter *endpoint.DomainFilter) (provider.Provider, bool, error) {
	cfg := externaldns.NewConfig()
	switch o.DNS.Provider {
	case v1alpha1.DNSProviderRFC2136:
		r := o.DNS.RFC2136
		if r == nil {
			return nil, false, errors.New("dns: provider rfc2136 needs the rfc2136 section")
		}
		secret, err := tsigSecret(ctx, o, r.TSIGSecretRef)
		if err != nil {
			return nil, false, err
		}
		cfg.RFC2136Host = []string{r.Host}
		cfg.RFC2136Port = int(cmp.Or(r.Port, 53))
		cfg.RFC2136Zone = []string{r.Zone}
		cfg.RFC2136TSIGKeyName = r.TSIGKeyName
		cfg.RFC2136TSIGSecret = secret
		cfg.RFC2136TSIGSecretAlg = cmp.Or(r.TSIGAlgorithm, "hmac-sha256")
		// Listing the zone (AXFR) is how the plan sees what exists; without it nothing is ever
		// updated or deleted.
		cfg.RFC2136AXFR = true
		cfg.RFC2136BatchChangeSize = rfc2136BatchSize
		cfg.RFC2136LoadBalancingStrategy = "disabled"
		p, err := rfc2136.New(ctx, cfg, filter)
		if err != nil {
			return nil, false, fmt.Errorf("dns: rfc2136 provider for %s:%d: %w", r.Host, cfg.RFC2136Port, err)
		}
		return p, false, nil
	case v1alpha1.DNSProviderRoute53:
		r := o.DNS.Route53
		if r == nil {
			return nil, false, errors.New("dns: provider route53 needs the route53 section")
		}
		// external-dns v0.22.0's provider/aws builds its clients from the process's AWS
		// environment (config.LoadDefaultConfig) and takes no aws.Config: the operator's own.
		if r.HostedZoneID != "" {
			cfg.ZoneIDFilter = []string{r.HostedZoneID}
		}
		cfg.AWSAPIRetries = 3
		cfg.AWSBatchChangeSize = 1000
		cfg.AWSBatchChangeSizeBytes = 32000
		cfg.AWSBatchChangeSizeValues = 1000
		cfg.AWSEvaluateTargetHealth = true
		p, err := aws.New(ctx, cfg, filter)
		if err != nil {
			return nil, false, fmt.Errorf("dns: route53 provider: %w", err)
		}
		return p, true, nil
	case v1alpha1.DNSProviderGoogle:
		g := o.DNS.Google
		if g == nil {
			return nil, false, errors.New("dns: provider google needs the google section")
		}
		// external-dns v0.22.0's provider/google takes its credentials (Application Default
		// Credentials) and its endpoint (https://dns.<GOOGLE_CLOUD_UNIVERSE_DOMAIN>/) from the
		// process: the operator's own. Its one seam is the oauth2 library's HTTP client in ctx,
		// used here only to bound every call: changes.create takes no context of its own.
		ctx = context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Timeout: googleCallTimeout})
		cfg.GoogleProject = g.Project
		if g.ManagedZone != "" {
			cfg.ZoneIDFilter = []string{g.ManagedZone}
		}
		cfg.GoogleBatchChangeSize = googleBatchChangeSize
		cfg.GoogleBatchChangeInterval = 0
		p, err := google.New(ctx, cfg, filter)
		if err != nil {
			return nil, false, fmt.Errorf("dns: google provider for project %s: %w", g.Project, err)
		}
		// The provider writes no routing policies: no weighted records.
		return p, false, nil
	}
	return nil, false, fmt.Errorf("dns: unknown provider %q", o.DNS.Provider)
}

// newRegistry is external-dns's TXT registry over p: ownership records named "<type>-<name>"
// hold the owner ID and the owning gateway (the resource label).
func newRegistry(p provider.Provider, ownerID string) (registry.Registry, error) {
	cfg := externaldns.NewConfig()
	cfg.TXTOwnerID = ownerID
	// "a-*.example.com" is no wildcard and some providers refuse it: the ownership record of
	// *.example.com is a-wildcard.example.com.
	cfg.TXTWildcardReplacement = "wildcard"
	cfg.ManagedDNSRecordTypes = managedTypes
	return txt.New(cfg, p)
}

// tsigSecret reads the base64 TSIG secret from the Secret's key "secret".
func tsigSecret(ctx context.Context, o Options, ref v1alpha1.ObjectRef) (string, error) {
	fail := func(msg string, err error) error {
		return &providers.CredentialsError{
			Reason:    providers.ReasonCredentialsUnavailable,
			Account:   "Secret " + ref.Namespace + "/" + ref.Name,
			Operation: "reading Secret " + ref.Namespace + "/" + ref.Name,
			Message:   msg,
			Err:       err,
		}
	}
	if o.Secrets == nil {
		return "", fail("no Secrets reader", nil)
	}
	data, err := o.Secrets(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return "", fail(err.Error(), err)
	}
	s := bytes.TrimSpace(data["secret"])
	if len(s) == 0 {
		return "", fail(`the Secret has no key "secret" (the base64 TSIG secret)`, nil)
	}
	return string(s), nil
}
