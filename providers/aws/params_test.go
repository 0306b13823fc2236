package aws

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

func TestDecodeOptions(t *testing.T) {
	flags := v1alpha1.AWSOptions{
		Region:   "eu-west-1",
		Endpoint: "https://elb.example.internal",
		Credentials: &v1alpha1.AWSCredentials{
			AssumeRole: &v1alpha1.AWSAssumeRole{RoleARN: "arn:aws:iam::111122223333:role/operator"},
		},
	}
	albDefaults := func(o v1alpha1.AWSOptions) v1alpha1.AWSOptions {
		o.LoadBalancerType = v1alpha1.AWSApplication
		o.Scheme = "internet-facing"
		o.IPAddressType = "ipv4"
		o.SSLPolicy = "ELBSecurityPolicy-TLS13-1-2-2021-06"
		o.DeregistrationDelaySeconds = ptr.To[int32](300)
		o.IdleTimeoutSeconds = ptr.To[int32](60)
		return o
	}
	manyTags := map[string]string{}
	for i := range 41 {
		manyTags[fmt.Sprintf("team-%02d", i)] = "x"
	}
	tests := []struct {
		name     string
		params   string
		defaults v1alpha1.AWSOptions
		want     v1alpha1.AWSOptions
		// wantErr are substrings the error must hold, one per expected problem.
		wantErr []string
	}{{
		name:     "empty takes every default",
		defaults: v1alpha1.AWSOptions{Region: "us-east-1"},
		want:     albDefaults(v1alpha1.AWSOptions{Region: "us-east-1"}),
	}, {
		name:     "null takes the operator's region, endpoint and credentials, with a session name",
		params:   "null",
		defaults: flags,
		want: albDefaults(v1alpha1.AWSOptions{
			Region:   "eu-west-1",
			Endpoint: "https://elb.example.internal",
			Credentials: &v1alpha1.AWSCredentials{AssumeRole: &v1alpha1.AWSAssumeRole{
				RoleARN: "arn:aws:iam::111122223333:role/operator", SessionName: "fleetgate",
			}},
		}),
	}, {
		name:     "the class's own values win over the operator's",
		params:   `{"region":"us-west-2","endpoint":"http://127.0.0.1:5000","credentials":{"secretRef":{"namespace":"ops","name":"aws"}}}`,
		defaults: flags,
		want: albDefaults(v1alpha1.AWSOptions{
			Region:      "us-west-2",
			Endpoint:    "http://127.0.0.1:5000",
			Credentials: &v1alpha1.AWSCredentials{SecretRef: &v1alpha1.ObjectRef{Namespace: "ops", Name: "aws"}},
		}),
	}, {
		name: "a network load balancer gets no idle timeout",
		params: `{"loadBalancerType":"network","scheme":"internal","region":"us-east-1","crossZone":true,
			"preserveClientIP":false,"proxyProtocolV2":true,"deregistrationDelaySeconds":0,
			"healthCheck":{"protocol":"HTTP","path":"/healthz","matcher":"200-599","intervalSeconds":10}}`,
		want: v1alpha1.AWSOptions{
			LoadBalancerType: v1alpha1.AWSNetwork, Scheme: "internal", IPAddressType: "ipv4", Region: "us-east-1",
			CrossZone: true, PreserveClientIP: ptr.To(false), ProxyProtocolV2: true,
			DeregistrationDelaySeconds: ptr.To[int32](0), SSLPolicy: "ELBSecurityPolicy-TLS13-1-2-2021-06",
			HealthCheck: &v1alpha1.AWSHealthCheck{Protocol: "HTTP", Path: "/healthz", Matcher: "200-599", IntervalSeconds: ptr.To[int32](10)},
		},
	}, {
		name: "certificates of the region, ACM and IAM; tags within AWS's rules",
		params: `{"region":"us-east-1","certificateARNs":["arn:aws:acm:us-east-1:111122223333:certificate/0a1b2c3d-0000-4444-8888-123456789abc",
			"arn:aws:iam::111122223333:server-certificate/legacy"],"tags":{"team":"edge","cost center":"4711 / ops+net@x"}}`,
		want: albDefaults(v1alpha1.AWSOptions{
			Region: "us-east-1",
			CertificateARNs: []string{"arn:aws:acm:us-east-1:111122223333:certificate/0a1b2c3d-0000-4444-8888-123456789abc",
				"arn:aws:iam::111122223333:server-certificate/legacy"},
			Tags: map[string]string{"team": "edge", "cost center": "4711 / ops+net@x"},
		}),
	}, {
		name:    "unknown fields are refused",
		params:  `{"region":"us-east-1","loadBalancer":"application"}`,
		wantErr: []string{`unknown field "loadBalancer"`},
	}, {
		name:    "data after the object is refused",
		params:  `{"region":"us-east-1"} {}`,
		wantErr: []string{"data after the object"},
	}, {
		name:    "a region is required",
		params:  `{}`,
		wantErr: []string{"spec.aws.region: required"},
	}, {
		name:    "enums a hand-built object may skip",
		params:  `{"region":"us-east-1a","loadBalancerType":"gateway","scheme":"public","ipAddressType":"ipv6","endpoint":"elb.local"}`,
		wantErr: []string{"region: \"us-east-1a\" is not a region", "loadBalancerType: \"gateway\"", "scheme: \"public\"", "ipAddressType: \"ipv6\"", "endpoint: \"elb.local\""},
	}, {
		name:   "network options on an application load balancer",
		params: `{"region":"us-east-1","crossZone":true,"preserveClientIP":true,"proxyProtocolV2":true}`,
		wantErr: []string{
			"crossZone: only for loadBalancerType network", "preserveClientIP: only for loadBalancerType network",
			"proxyProtocolV2: only for loadBalancerType network",
		},
	}, {
		name: "application options on a network load balancer",
		params: `{"region":"us-east-1","loadBalancerType":"network","idleTimeoutSeconds":60,
			"certificateARNs":["arn:aws:acm:us-east-1:111122223333:certificate/0a1b"]}`,
		wantErr: []string{"idleTimeoutSeconds: only for loadBalancerType application", "certificateARNs: only for loadBalancerType application"},
	}, {
		name: "certificate ARNs: format, region, duplicates",
		params: `{"region":"us-east-1","certificateARNs":["arn:aws:acm:us-west-2:111122223333:certificate/0a1b",
			"arn:aws:acm:us-east-1:1111:certificate/0a1b","arn:aws:acm:us-west-2:111122223333:certificate/0a1b"]}`,
		wantErr: []string{
			"certificateARNs[0]: certificate is in us-west-2, the load balancers in us-east-1",
			"certificateARNs[1]: \"arn:aws:acm:us-east-1:1111:certificate/0a1b\" is not an ACM certificate ARN",
			"certificateARNs[2]: listed twice",
		},
	}, {
		name:    "ranges",
		params:  `{"region":"us-east-1","idleTimeoutSeconds":0,"deregistrationDelaySeconds":3601,"sslPolicy":"TLS13"}`,
		wantErr: []string{"idleTimeoutSeconds: 0 is outside 1-4000", "deregistrationDelaySeconds: 3601 is outside 0-3600", "sslPolicy: \"TLS13\""},
	}, {
		name:   "health check: timeout not below interval, HTTP fields with TCP, codes",
		params: `{"region":"us-east-1","healthCheck":{"protocol":"TCP","path":"/","matcher":"200","timeoutSeconds":30,"intervalSeconds":30,"port":"70000"}}`,
		wantErr: []string{
			"healthCheck.protocol: TCP checks are for network load balancers",
			"healthCheck.path: set with protocol TCP", "healthCheck.matcher: set with protocol TCP",
			"healthCheck.timeoutSeconds: 30 must be less than intervalSeconds 30", "healthCheck.port: \"70000\"",
		},
	}, {
		name:    "health check: AWS's default timeout counts against a short interval",
		params:  `{"region":"us-east-1","loadBalancerType":"network","healthCheck":{"intervalSeconds":5}}`,
		wantErr: []string{"healthCheck.timeoutSeconds: 10 (AWS's default) must be less than intervalSeconds 5"},
	}, {
		name:    "health check: an ALB's matcher stops at 499",
		params:  `{"region":"us-east-1","healthCheck":{"matcher":"200-299,500","timeoutSeconds":31}}`,
		wantErr: []string{"healthCheck.matcher: \"500\": codes must be ascending ranges within 200-499", "31 must be less than intervalSeconds 30 (AWS's default)"},
	}, {
		name:    "health check: matcher syntax and order",
		params:  `{"region":"us-east-1","loadBalancerType":"network","healthCheck":{"matcher":"299-200"}}`,
		wantErr: []string{"healthCheck.matcher: \"299-200\": codes must be ascending"},
	}, {
		name: "tags: reserved prefixes, lengths, characters",
		params: fmt.Sprintf(`{"region":"us-east-1","tags":{"AWS:cost":"x","fleetgate.dev/gateway":"x","%s":"x","long":"%s","bad!":"x","ok":"semi;colon"}}`,
			strings.Repeat("k", 129), strings.Repeat("v", 257)),
		wantErr: []string{
			`tags["AWS:cost"]: the aws: prefix is reserved`, `tags["fleetgate.dev/gateway"]: the fleetgate.dev/ prefix is reserved`,
			"key has 129 characters, needs 1-128", `tags["long"]: value has 257 characters, at most 256`,
			`tags["bad!"]: key may hold`, `tags["ok"]: value may hold`,
		},
	}, {
		name:    "tags: at most 40",
		params:  mustJSON(t, v1alpha1.AWSOptions{Region: "us-east-1", Tags: manyTags}),
		wantErr: []string{"spec.aws.tags: 41 tags, at most 40"},
	}, {
		name: "credentials",
		params: `{"region":"us-east-1","credentials":{"secretRef":{"namespace":"","name":"aws"},
			"webIdentity":{"roleARN":"arn:aws:iam::1:role/x","tokenFile":"token"},
			"assumeRole":{"roleARN":"role/x","externalID":"e","sessionName":"a b"}}}`,
		wantErr: []string{
			"credentials: secretRef and webIdentity are exclusive", "credentials.secretRef: needs both namespace and name",
			"credentials.webIdentity.roleARN: \"arn:aws:iam::1:role/x\"", "credentials.webIdentity.tokenFile: \"token\" is not an absolute path",
			"credentials.assumeRole.roleARN: \"role/x\"", "credentials.assumeRole.externalID: needs 2-1224",
			"credentials.assumeRole.sessionName: \"a b\"",
		},
	}, {
		name:   "network placement and access logs",
		params: `{"region":"us-east-1","vpc":"vpc-XYZ","subnets":["subnet-0a","subnet-0a","sn-1"],"accessLogs":{"bucket":"My_Bucket","prefix":"x/AWSLogs"}}`,
		wantErr: []string{
			"vpc: \"vpc-XYZ\"", "subnets[1]: subnet-0a is listed twice", "subnets[2]: \"sn-1\" is not a subnet ID",
			"accessLogs.bucket: \"My_Bucket\"", "accessLogs.prefix: may not contain AWSLogs",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.defaults.DeepCopy()
			got, err := decodeOptions(json.RawMessage(tc.params), tc.defaults)
			if diff := cmp.Diff(before, &tc.defaults); diff != "" {
				t.Errorf("decodeOptions changed its defaults (-before +after):\n%s", diff)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("decodeOptions: %v", err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("decodeOptions (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("decodeOptions accepted %s: %+v", tc.params, got)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if n := strings.Count(err.Error(), "spec.aws."); n > len(tc.wantErr) {
				t.Errorf("error names %d problems, want %d: %v", n, len(tc.wantErr), err)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
