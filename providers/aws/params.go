package aws

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// Defaults of AWSOptions that are ours rather than AWS's.
const (
	schemeInternal     = "internal"
	defaultSessionName = "fleetgate"
)

// decodeOptions reads a class's spec.aws (params, JSON) strictly, fills what it leaves unset from
// defaults (the operator's region, endpoint and credentials) and then from the documented defaults,
// and checks everything the CRD's schema cannot (or a hand-built object may have skipped). The
// error names every problem, with its field, at once.
func decodeOptions(params json.RawMessage, defaults v1alpha1.AWSOptions) (v1alpha1.AWSOptions, error) {
	var o v1alpha1.AWSOptions
	if trimmed := bytes.TrimSpace(params); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			return v1alpha1.AWSOptions{}, fmt.Errorf("decoding spec.aws: %w", err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return v1alpha1.AWSOptions{}, errors.New("decoding spec.aws: data after the object")
		}
	}
	o.Region = cmp.Or(o.Region, defaults.Region)
	o.Endpoint = cmp.Or(o.Endpoint, defaults.Endpoint)
	if o.Credentials == nil {
		o.Credentials = defaults.Credentials
	}
	// A copy, so that defaulting the session name never writes into defaults.
	o.Credentials = o.Credentials.DeepCopy()
	if r := o.Credentials; r != nil && r.AssumeRole != nil {
		r.AssumeRole.SessionName = cmp.Or(r.AssumeRole.SessionName, defaultSessionName)
	}
	o.LoadBalancerType = cmp.Or(o.LoadBalancerType, v1alpha1.AWSApplication)
	o.Scheme = cmp.Or(o.Scheme, schemeInternetFacing)
	o.IPAddressType = cmp.Or(o.IPAddressType, ipAddressTypeIPv4)
	o.SSLPolicy = cmp.Or(o.SSLPolicy, defaultSSLPolicy)
	if o.DeregistrationDelaySeconds == nil {
		o.DeregistrationDelaySeconds = ptr.To[int32](defaultDeregistrationDelaySeconds)
	}
	// Only an ALB has the attribute: defaulting it on an NLB would make validate refuse the class.
	if o.IdleTimeoutSeconds == nil && o.LoadBalancerType == v1alpha1.AWSApplication {
		o.IdleTimeoutSeconds = ptr.To[int32](defaultIdleTimeoutSeconds)
	}
	if msgs := validateOptions(&o); len(msgs) > 0 {
		return v1alpha1.AWSOptions{}, fmt.Errorf("invalid AWS options: %s", strings.Join(msgs, "; "))
	}
	return o, nil
}
