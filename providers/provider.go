package providers

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Provider makes the load balancer of one gateway real and reports what it got. Implementations
// must be idempotent: Ensure with an unchanged model makes no mutating calls, and Delete of
// something that does not exist succeeds. Both take the whole model so that a provider can find
// its resources from the gateway key and the clusters alone; Delete needs only Gateway,
// Namespace, Name and Clusters. The provisioning engine calls Ensure and Delete of different
// gateways concurrently, never two calls for one gateway at once, and cancels ctx on shutdown:
// an interrupted call must leave state that the next Ensure (or Delete) completes.
type Provider interface {
	// Capabilities validates the provider's parameters (LoadBalancer.Parameters, the provider's
	// section of a GatewayClassConfig) and returns what a class with them can express. It is
	// pure: no I/O, the same answer for the same input. An error makes the GatewayClass not
	// Accepted (InvalidParameters) with the error as its message.
	Capabilities(params json.RawMessage) (Capabilities, error)
	// Ensure creates or updates every resource of lb and reports its readiness and addresses.
	// A not-ready Status is not an error; errors are for calls that failed and should be retried.
	// A call refused because of the account's credentials or permissions is a *CredentialsError.
	Ensure(ctx context.Context, lb *LoadBalancer) (Status, error)
	// Delete removes every resource owned by lb.Gateway in lb.Clusters. Calling it with a
	// subset of the clusters removes the gateway from those clusters only.
	Delete(ctx context.Context, lb *LoadBalancer) error
	// List finds, by ownership labels/tags alone (never by name, never from memory), every
	// gateway that has resources of this provider, so that the orphan sweep can delete those no
	// live object owns. Each entry has Gateway, Namespace, Name, Provider and Clusters set:
	// enough for Delete.
	List(ctx context.Context) ([]LoadBalancer, error)
}

// Status is what a provider observed after Ensure.
type Status struct {
	// Ready is true when the load balancer serves traffic on its addresses.
	Ready bool `json:"ready"`
	// Reason is one of the Reason constants (CamelCase, Gateway API style); Message is for humans.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Addresses are the addresses the load balancer got, sorted and without duplicates.
	Addresses []Address `json:"addresses,omitempty"`
	// Direct: the load balancer serves the routing itself (a cloud ALB's rules, an NLB's
	// listeners), so no fleetgate proxy has to acknowledge the config before the gateway is programmed.
	Direct bool `json:"direct,omitempty"`
	// Account names the cloud account whose calls just succeeded (where its credentials come
	// from, never them), so that the class can show its account works again after a
	// CredentialsError; "" for providers without cloud accounts.
	Account string `json:"account,omitempty"`
}

// Address types, as in the Gateway API.
const (
	AddressTypeIPAddress = "IPAddress"
	AddressTypeHostname  = "Hostname"
)

// Reasons a provider reports in Status. The controller maps them onto the Gateway's Programmed
// (and, for UnsupportedAddress, Accepted) conditions; they use the Gateway API's reason names.
const (
	// ReasonProgrammed: ready and serving on its addresses.
	ReasonProgrammed = "Programmed"
	// ReasonPending: resources exist but are not ready yet (e.g. proxy replicas unavailable).
	ReasonPending = "Pending"
	// ReasonAddressNotAssigned: no address was assigned (yet), or none can be reported.
	ReasonAddressNotAssigned = "AddressNotAssigned"
	// ReasonAddressNotUsable: a requested address is of a supported type but cannot be used.
	ReasonAddressNotUsable = "AddressNotUsable"
	// ReasonUnsupportedAddress: a requested address type (or count) is not supported.
	ReasonUnsupportedAddress = "UnsupportedAddress"
	// ReasonNoResources: nothing could be created, e.g. the gateway has no valid listener.
	ReasonNoResources = "NoResources"
	// ReasonInvalid: the provider refuses what the model asks for (a change its load balancer
	// cannot take, a value the cloud cannot express); the message says what.
	ReasonInvalid = "Invalid"
)

// Ownership labels (tags, on clouds) put on every resource a provider creates. Resources are
// found again by LabelManagedBy plus LabelGateway, never by name, so nothing leaks when names change.
const (
	LabelManagedBy = "fleetgate.dev/managed-by"
	ManagedBy      = "fleetgate"
	// LabelGateway holds GatewayID(lb.Gateway): a label-safe hash, since keys contain '/'.
	LabelGateway = "fleetgate.dev/gateway"
	// LabelGatewayNamespace and LabelGatewayName are for humans and selectors; the name label is
	// left out when the Gateway name is longer than a label value may be.
	LabelGatewayNamespace = "fleetgate.dev/gateway-namespace"
	LabelGatewayName      = "fleetgate.dev/gateway-name"
	// LabelGatewayAPIName is gwv1.GatewayNameLabelKey, set like LabelGatewayName.
	LabelGatewayAPIName = "gateway.networking.k8s.io/gateway-name"
	// AnnotationGateway holds the full gateway key.
	AnnotationGateway = "fleetgate.dev/gateway-key"
)

// GatewayID is the label-safe identity of a gateway key: "gw-" and 24 hex digits of its SHA-256.
func GatewayID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "gw-" + hex.EncodeToString(sum[:12])
}

// OwnerLabels are the ownership labels of lb's resources.
func OwnerLabels(lb *LoadBalancer) map[string]string {
	l := map[string]string{
		LabelManagedBy:        ManagedBy,
		LabelGateway:          GatewayID(lb.Gateway),
		LabelGatewayNamespace: lb.Namespace,
	}
	if len(lb.Name) <= 63 {
		l[LabelGatewayName] = lb.Name
		// The Gateway API's own label for what implements a Gateway (GEP-1762).
		l[LabelGatewayAPIName] = lb.Name
	}
	return l
}

// ResourceName is the name of the Kubernetes objects a provider makes for lb in its namespace: a
// DNS-1035 label (a Service name must be one), readable, and unique per gateway key thanks to a
// hash suffix.
func ResourceName(lb *LoadBalancer) string {
	sum := sha256.Sum256([]byte(lb.Gateway))
	suffix := "-" + hex.EncodeToString(sum[:4])
	base := "fleetgate-" + strings.ReplaceAll(strings.ToLower(lb.Name), ".", "-")
	if max := 63 - len(suffix); len(base) > max {
		base = base[:max]
	}
	return strings.TrimRight(base, "-") + suffix
}

// OwnerSelector selects every resource of the gateway key across namespaces.
func OwnerSelector(key string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelGateway: GatewayID(key)}
}

// ResourceLabels are lb's infrastructure labels with the ownership labels on top: a Gateway's
// spec.infrastructure must not be able to take a resource away from its owner.
func ResourceLabels(lb *LoadBalancer) map[string]string {
	l := maps.Clone(lb.Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, OwnerLabels(lb))
	return l
}

// ResourceAnnotations are lb's infrastructure annotations plus AnnotationGateway.
func ResourceAnnotations(lb *LoadBalancer) map[string]string {
	a := maps.Clone(lb.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationGateway] = lb.Gateway
	return a
}

// OwnerOf reads which gateway a resource belongs to from its ownership labels and annotations, as
// List needs it: the gateway key and name. ok is false when the key is missing or does not hash
// to LabelGateway: such a resource could not be found from the key by Delete either. The name
// label is missing for names longer than a label value; a Gateway's key ends in its name.
func OwnerOf(labels, annotations map[string]string) (key, name string, ok bool) {
	key = annotations[AnnotationGateway]
	if key == "" || labels[LabelGateway] != GatewayID(key) {
		return "", "", false
	}
	if name = labels[LabelGatewayName]; name == "" {
		name = key[strings.LastIndex(key, "/")+1:]
	}
	return key, name, true
}

// SplitKey reads the namespace and name out of a gateway key: "cluster/namespace/name",
// "namespace/name", or "cluster/service:namespace/name" for a Service.
func SplitKey(key string) (namespace, name string) {
	parts := strings.Split(key, "/")
	name = parts[len(parts)-1]
	if len(parts) > 1 {
		namespace = parts[len(parts)-2]
		if i := strings.LastIndex(namespace, ":"); i >= 0 {
			namespace = namespace[i+1:]
		}
	}
	return namespace, name
}

// PlanSummary is the condition message of a dry run: how many calls, the first few.
func PlanSummary[C fmt.Stringer](calls []C) string {
	if len(calls) == 0 {
		return "dry run: the load balancer is in sync, no call would be made"
	}
	const shown = 5
	var b strings.Builder
	fmt.Fprintf(&b, "dry run: %d calls would be made", len(calls))
	for i, c := range calls {
		if i == shown {
			fmt.Fprintf(&b, "; … and %d more", len(calls)-shown)
			break
		}
		b.WriteString("; " + c.String())
	}
	return b.String()
}

// Listed is what List returns from the gateways a provider found by key: sorted by key, each with
// its clusters sorted and without duplicates.
func Listed(found map[string]*LoadBalancer) []LoadBalancer {
	out := make([]LoadBalancer, 0, len(found))
	for _, key := range slices.Sorted(maps.Keys(found)) {
		lb := found[key]
		slices.Sort(lb.Clusters)
		lb.Clusters = slices.Compact(lb.Clusters)
		out = append(out, *lb)
	}
	return out
}

// SortAddresses sorts addresses by type then value and drops duplicates, so that statuses compare.
func SortAddresses(as []Address) []Address {
	slices.SortFunc(as, func(a, b Address) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Value, b.Value))
	})
	return slices.Compact(as)
}

// Registry maps provider names (GatewayClassConfig.spec.provider) to providers. Package main builds
// one and hands it to the controllers; there is no package-level registry.
type Registry struct {
	mu        sync.RWMutex
	providers map[string]Provider
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{providers: map[string]Provider{}}
}

// Register adds p under name. Registering a name twice is a wiring bug and panics, like
// http.ServeMux, since it can only happen at start-up.
func (r *Registry) Register(name string, p Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.providers[name]; dup {
		panic(fmt.Sprintf("providers: %q registered twice", name))
	}
	if p == nil {
		panic(fmt.Sprintf("providers: nil provider for %q", name))
	}
	r.providers[name] = p
}

// Get returns the provider registered under name.
func (r *Registry) Get(name string) (Provider, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.providers[name]
	return p, ok
}

// Capabilities is the named provider's Capabilities; ok is false for a provider that is not registered.
func (r *Registry) Capabilities(name string, params json.RawMessage) (c Capabilities, ok bool, err error) {
	p, ok := r.Get(name)
	if !ok {
		return Capabilities{}, false, nil
	}
	c, err = p.Capabilities(params)
	return c, true, err
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.providers))
}
