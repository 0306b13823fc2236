package aws

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/acm"
)

// syncCertificates imports the Stack's certificates into ACM, and re-imports one in place (same
// ARN, so listeners keep it) when its Fingerprint changed: a rotated Secret.
func (d *deployer) syncCertificates(ctx context.Context, st *state, x *executor) error {
	for _, c := range st.stack.Certificates {
		tags := d.tagsFor(st.stack, c.ID, map[string]string{TagFingerprint: c.Fingerprint})
		var live *liveCert
		for i, lc := range st.obs.certs {
			if lc.tags[TagResource] == c.ID {
				live = &st.obs.certs[i]
				break
			}
		}
		if live == nil {
			st.certARN[c.ID] = placeholder(c.ID)
			if err := x.do(Call{"ImportCertificate", c.ID, "new, fingerprint " + c.Fingerprint}, func() error {
				out, err := d.acm.ImportCertificate(ctx, d.importInput(c, nil, tags))
				if err == nil {
					st.certARN[c.ID] = *out.CertificateArn
					d.certTags.set(*out.CertificateArn, tags)
				}
				return err
			}); err != nil {
				return err
			}
			continue
		}
		st.certARN[c.ID] = live.arn
		have := live.tags
		if have[TagFingerprint] != c.Fingerprint {
			if err := x.do(Call{"ImportCertificate", c.ID, "re-import in place, fingerprint " + c.Fingerprint}, func() error {
				_, err := d.acm.ImportCertificate(ctx, d.importInput(c, &live.arn, nil))
				return err
			}); err != nil {
				return err
			}
			// AWS keeps the tags across a re-import, moto drops them: write them all again.
			have = nil
		}
		// The fingerprint tag is written after the re-import: a crash in between re-imports again.
		if err := d.syncCertTags(ctx, x, c.ID, live.arn, have, tags); err != nil {
			return err
		}
	}
	return nil
}

// importInput: tags only on the first import, ACM refuses them on a re-import.
func (d *deployer) importInput(c Certificate, arn *string, tags map[string]string) *acm.ImportCertificateInput {
	in := &acm.ImportCertificateInput{CertificateArn: arn, Certificate: c.CertPEM, PrivateKey: c.KeyPEM}
	if len(c.ChainPEM) > 0 {
		in.CertificateChain = c.ChainPEM
	}
	if arn == nil {
		in.Tags = acmTags(tags)
	}
	return in
}

func (d *deployer) syncCertTags(ctx context.Context, x *executor, id, arn string, have, want map[string]string) error {
	set, remove := tagDiff(have, want)
	if len(set) == 0 && len(remove) == 0 {
		return nil
	}
	if len(set) > 0 {
		if err := x.do(Call{"AddTagsToCertificate", id, tagDetail(set, nil)}, func() error {
			_, err := d.acm.AddTagsToCertificate(ctx, &acm.AddTagsToCertificateInput{CertificateArn: &arn, Tags: acmTags(set)})
			return err
		}); err != nil {
			return err
		}
	}
	if len(remove) > 0 {
		if err := x.do(Call{"RemoveTagsFromCertificate", id, tagDetail(nil, remove)}, func() error {
			old := make(map[string]string, len(remove))
			for _, k := range remove {
				old[k] = have[k]
			}
			_, err := d.acm.RemoveTagsFromCertificate(ctx, &acm.RemoveTagsFromCertificateInput{CertificateArn: &arn, Tags: acmTags(old)})
			return err
		}); err != nil {
			return err
		}
	}
	if !x.dry {
		d.certTags.set(arn, maps.Clone(want))
	}
	return nil
}

// certificateARNs resolves a listener's certificates: Stack IDs to ARNs; "arn:..." as given.
func (st *state) certificateARNs(ids []string) ([]string, error) {
	arns := make([]string, len(ids))
	for i, id := range ids {
		if strings.HasPrefix(id, "arn:") {
			arns[i] = id
			continue
		}
		arn, ok := st.certARN[id]
		if !ok {
			return nil, fmt.Errorf("listener certificate %s is not in the stack", id)
		}
		arns[i] = arn
	}
	return arns, nil
}
