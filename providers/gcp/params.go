package gcp

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// defaultNetwork is the VPC network of projects that never changed it.
const defaultNetwork = "default"

var (
	projectRE = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`)
	regionRE  = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`)
	// labelRE is a GCE label key or value: lower-case letters, digits, '-' and '_', at most 63
	// (a key must start with a letter and not be empty).
	labelKeyRE   = regexp.MustCompile(`^[a-z][-_a-z0-9]{0,62}$`)
	labelValueRE = regexp.MustCompile(`^[-_a-z0-9]{0,63}$`)
)

// decodeOptions reads a class's spec.gcp (params, JSON) strictly, fills what it leaves unset from
// defaults (the operator's project, region, endpoint and credentials) and the documented
// defaults, and checks everything the CRD's schema cannot. The error names every problem at once.
func decodeOptions(params json.RawMessage, defaults v1alpha1.GCPOptions) (v1alpha1.GCPOptions, error) {
	var o v1alpha1.GCPOptions
	if trimmed := bytes.TrimSpace(params); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			return v1alpha1.GCPOptions{}, fmt.Errorf("decoding spec.gcp: %w", err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return v1alpha1.GCPOptions{}, errors.New("decoding spec.gcp: data after the object")
		}
	}
	o.Project = cmp.Or(o.Project, defaults.Project)
	o.Region = cmp.Or(o.Region, defaults.Region)
	o.Endpoint = cmp.Or(o.Endpoint, defaults.Endpoint)
	o.Network = cmp.Or(o.Network, defaults.Network, defaultNetwork)
	if o.Credentials == nil {
		o.Credentials = defaults.Credentials.DeepCopy()
	}
	o.LoadBalancerType = cmp.Or(o.LoadBalancerType, v1alpha1.GCPGlobal)
	if msgs := validateOptions(&o); len(msgs) > 0 {
		return v1alpha1.GCPOptions{}, fmt.Errorf("invalid GCP options: %s", strings.Join(msgs, "; "))
	}
	return o, nil
}

func validateOptions(o *v1alpha1.GCPOptions) []string {
	var msgs []string
	switch {
	case o.Project == "":
		msgs = append(msgs, "spec.gcp.project: required (or the operator's --gcp-project)")
	case !projectRE.MatchString(o.Project):
		msgs = append(msgs, fmt.Sprintf("spec.gcp.project: %q is not a project ID", o.Project))
	}
	switch o.LoadBalancerType {
	case v1alpha1.GCPGlobal:
	case v1alpha1.GCPRegional, v1alpha1.GCPNetwork:
		if o.Region == "" {
			msgs = append(msgs, fmt.Sprintf("spec.gcp.region: a %s load balancer needs a region (or the operator's --gcp-region)", o.LoadBalancerType))
		}
	default:
		msgs = append(msgs, fmt.Sprintf("spec.gcp.loadBalancerType: %q is not global, regional or network", o.LoadBalancerType))
	}
	if o.Region != "" && !regionRE.MatchString(o.Region) {
		msgs = append(msgs, fmt.Sprintf("spec.gcp.region: %q is not a region", o.Region))
	}
	if o.Endpoint != "" && !regexp.MustCompile(`^https?://[^/]+$`).MatchString(o.Endpoint) {
		msgs = append(msgs, fmt.Sprintf("spec.gcp.endpoint: %q must be a scheme and host without a path", o.Endpoint))
	}
	for _, k := range slices.Sorted(maps.Keys(o.Labels)) {
		v := o.Labels[k]
		if !labelKeyRE.MatchString(k) || !labelValueRE.MatchString(v) || strings.HasPrefix(k, labelPrefix) {
			msgs = append(msgs, fmt.Sprintf("spec.gcp.labels: %q=%q is not a GCE label (lower-case letters, digits, - and _, at most 63; keys starting %q are fleetgate's)", k, v, labelPrefix))
		}
	}
	if c := o.Credentials; c != nil && c.SecretRef != nil && c.WorkloadIdentity != nil {
		msgs = append(msgs, "spec.gcp.credentials: secretRef and workloadIdentity are exclusive")
	}
	if hc := o.HealthCheck; hc != nil && hc.TimeoutSeconds != nil && hc.IntervalSeconds != nil && *hc.TimeoutSeconds > *hc.IntervalSeconds {
		msgs = append(msgs, "spec.gcp.healthCheck: timeoutSeconds must not exceed intervalSeconds")
	}
	return msgs
}
