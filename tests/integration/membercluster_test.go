package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestMemberClusterAWSValidation: the API server keeps a MemberCluster's spec.provider.aws as
// written and refuses what the provider could never use: group IDs that are not sg-…, more than
// 16 groups or none, a malformed region, and exclusive credential sources together.
func TestMemberClusterAWSValidation(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	valid := func() *v1alpha1.MemberAWS {
		return &v1alpha1.MemberAWS{
			Credentials: &v1alpha1.AWSCredentials{
				SecretRef:  &v1alpha1.ObjectRef{Namespace: "fleetgate-system", Name: "east-aws"},
				AssumeRole: &v1alpha1.AWSAssumeRole{RoleARN: "arn:aws:iam::222222222222:role/fleetgate", ExternalID: "fleet-1"},
			},
			Region:         "eu-west-1",
			SecurityGroups: []string{"sg-0a1b2c3d", "sg-0e1f2a3b"},
		}
	}
	member := func(name string, aws *v1alpha1.MemberAWS) *v1alpha1.MemberCluster {
		return &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MemberClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretKeyRef{Name: "kc"}, Region: "eu-west-1",
			Provider: v1alpha1.ProviderHints{VPC: "vpc-0e", AWS: aws}}}
	}

	good := member("east", valid())
	if err := c.Client.Create(t.Context(), good); err != nil {
		t.Fatalf("creating a valid MemberCluster: %v", err)
	}
	var got v1alpha1.MemberCluster
	if err := c.Client.Get(t.Context(), client.ObjectKeyFromObject(good), &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(valid(), got.Spec.Provider.AWS); d != "" {
		t.Errorf("spec.provider.aws as stored (-written +stored):\n%s", d)
	}

	seventeen := make([]string, 17)
	for i := range seventeen {
		seventeen[i] = fmt.Sprintf("sg-%08x", i)
	}
	tests := []struct {
		name   string
		mutate func(*v1alpha1.MemberAWS)
		want   string
	}{
		{"not a group ID", func(a *v1alpha1.MemberAWS) { a.SecurityGroups = []string{"sg-XYZ"} }, "spec.provider.aws.securityGroups[0]"},
		{"too many groups", func(a *v1alpha1.MemberAWS) { a.SecurityGroups = seventeen }, "must have at most 16 items"},
		{"no groups", func(a *v1alpha1.MemberAWS) { a.SecurityGroups = []string{} }, "should have at least 1 items"},
		{"region", func(a *v1alpha1.MemberAWS) { a.Region = "EU" }, "spec.provider.aws.region"},
		{"two credential sources", func(a *v1alpha1.MemberAWS) {
			a.Credentials.WebIdentity = &v1alpha1.AWSWebIdentity{RoleARN: "arn:aws:iam::222222222222:role/w", TokenFile: "/var/run/token"}
		}, "secretRef and webIdentity are exclusive"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := valid()
			tt.mutate(a)
			err := c.Client.Create(t.Context(), member(fmt.Sprintf("bad-%d", i), a))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("create: err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
