package aws

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// AnnotationDryRun on a Gateway's spec.infrastructure asks for a plan without mutating calls, for
// that Gateway alone (AWSOptions.DryRun asks it for the whole class).
const AnnotationDryRun = "fleetgate.dev/dry-run"

// Build turns the provider-neutral model of one gateway into the Stack of AWS resources it needs,
// purely. o has its defaults (decodeOptions); net is the discovered VPC and subnets; fleet is the
// operator's fleet ID, which names are derived from so that two fleets never share a resource.
// What ELBv2 cannot express is an error naming the route or listener: translation consulted
// capabilitiesOf already, so meeting it here means the model and the capabilities disagree.
func Build(lb *providers.LoadBalancer, o v1alpha1.AWSOptions, net Network, fleet string) (*Stack, error) {
	if lb.Routing == nil {
		return nil, fmt.Errorf("gateway %s: no routing", lb.Gateway)
	}
	tags, err := stackTags(o.Tags, lb)
	if err != nil {
		return nil, fmt.Errorf("gateway %s: %w", lb.Gateway, err)
	}
	b := &builder{lb: lb, o: o, net: net, fleet: fleet, tgs: map[string]TargetGroup{}, certs: map[string]Certificate{}}
	s := &Stack{
		Gateway:   lb.Gateway,
		GatewayID: providers.GatewayID(lb.Gateway),
		Clusters:  slices.Sorted(slices.Values(lb.Clusters)),
		Tags:      tags,
		DryRun:    o.DryRun || lb.Annotations[AnnotationDryRun] == "true",
	}
	if s.LoadBalancer, err = b.loadBalancer(); err != nil {
		return nil, fmt.Errorf("gateway %s: %w", lb.Gateway, err)
	}
	switch o.LoadBalancerType {
	case v1alpha1.AWSApplication:
		s.SecurityGroup = b.securityGroup()
		err = b.applicationListeners(s)
	case v1alpha1.AWSNetwork:
		err = b.networkListeners(s)
	default:
		err = fmt.Errorf("load balancer type %q is neither %s nor %s", o.LoadBalancerType, TypeApplication, TypeNetwork)
	}
	if err != nil {
		return nil, fmt.Errorf("gateway %s: %w", lb.Gateway, err)
	}
	s.TargetGroups = sortedByID(b.tgs, func(t TargetGroup) string { return t.ID })
	s.Certificates = sortedByID(b.certs, func(c Certificate) string { return c.ID })
	slices.SortFunc(s.Listeners, func(a, b Listener) int { return cmp.Compare(a.ID, b.ID) })
	// Rules keep their precedence order within a listener (stable sort by listener only).
	slices.SortStableFunc(s.Rules, func(a, b Rule) int { return cmp.Compare(a.Listener, b.Listener) })
	s.Notes = b.notes
	if err := validateStack(s); err != nil {
		return nil, fmt.Errorf("gateway %s: %w", lb.Gateway, err)
	}
	return s, nil
}

// builder carries what the per-resource builders share while one Stack is built.
type builder struct {
	lb    *providers.LoadBalancer
	o     v1alpha1.AWSOptions
	net   Network
	fleet string
	// tgs and certs are keyed by ID: two rules forwarding to the same backend share its target
	// groups, two listeners serving the same Secret share its certificate.
	tgs   map[string]TargetGroup
	certs map[string]Certificate
	notes []string
}

func (b *builder) note(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

// stackTags are the user tags of every resource: the Gateway's infrastructure labels, the class's
// tags over them (labels are for Kubernetes objects first, and a label must not take a cost-centre
// tag by accident), then the tags the gateway's annotations ask for over both: those are tags,
// asked for as such, and the gateway's owner knows its resources best (annotationTags).
func stackTags(class map[string]string, lb *providers.LoadBalancer) (map[string]string, error) {
	annotated, err := annotationTags(lb.Annotations)
	if err != nil {
		return nil, err
	}
	if len(class)+len(lb.Labels)+len(annotated) == 0 {
		return nil, nil
	}
	t := maps.Clone(lb.Labels)
	if t == nil {
		t = map[string]string{}
	}
	maps.Copy(t, class)
	maps.Copy(t, annotated)
	return t, nil
}

func sortedByID[T any](m map[string]T, id func(T) string) []T {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b T) int { return cmp.Compare(id(a), id(b)) })
	return out
}

// errUnsupported marks what ELBv2 cannot express, so callers can tell it from a malformed input.
var errUnsupported = errors.New("not expressible on ELBv2")
