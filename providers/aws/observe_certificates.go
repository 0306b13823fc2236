package aws

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	acmtypes "github.com/aws/aws-sdk-go-v2/service/acm/types"
)

// findCertificates lists ACM certificates and keeps ours. Tags are cached per ARN: they change
// only when the deployer changes them, which updates the cache.
func (d *deployer) findCertificates(ctx context.Context, match func(map[string]string) bool) ([]liveCert, error) {
	var certs []liveCert
	// Without Includes, ACM lists only RSA-1024 and RSA-2048 certificates.
	in := &acm.ListCertificatesInput{Includes: &acmtypes.Filters{KeyTypes: acmtypes.KeyAlgorithm("").Values()}}
	for {
		out, err := d.acm.ListCertificates(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("listing certificates: %w", err)
		}
		for _, c := range out.CertificateSummaryList {
			arn := aws.ToString(c.CertificateArn)
			t, err := d.certTags.get(ctx, d.acm, arn)
			if err != nil {
				return nil, err
			}
			if match(t) {
				certs = append(certs, liveCert{arn: arn, tags: t})
			}
		}
		if aws.ToString(out.NextToken) == "" {
			return certs, nil
		}
		in.NextToken = out.NextToken
	}
}

// tagCache remembers the tags of certificates by ARN (ACM has no server-side tag filter).
type tagCache struct {
	mu   sync.Mutex
	tags map[string]map[string]string
}

func (c *tagCache) get(ctx context.Context, api acmAPI, arn string) (map[string]string, error) {
	c.mu.Lock()
	t, ok := c.tags[arn]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	out, err := api.ListTagsForCertificate(ctx, &acm.ListTagsForCertificateInput{CertificateArn: &arn})
	if isNotFound(err) {
		return nil, nil // deleted since it was listed: no tags, not ours
	}
	if err != nil {
		return nil, fmt.Errorf("listing tags of %s: %w", arn, err)
	}
	t = map[string]string{}
	for _, kv := range out.Tags {
		t[aws.ToString(kv.Key)] = aws.ToString(kv.Value)
	}
	c.set(arn, t)
	return t, nil
}

// set records tags the deployer wrote; nil forgets the ARN.
func (c *tagCache) set(arn string, t map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t == nil {
		delete(c.tags, arn)
		return
	}
	c.tags[arn] = t
}
