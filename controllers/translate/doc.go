// Package translate turns a snapshot into everything fleetgate does about it: one dataplane
// config (ir.Config) and one load-balancer model (providers.LoadBalancer) per gateway, and the
// statuses of every object of our controller: GatewayClasses, Gateways, ListenerSets, routes,
// BackendTLSPolicies, Ingresses and LoadBalancer Services.
//
// Translate is pure: no context, client, clock, network, cloud SDK or randomness. The same
// snapshot always yields the same Result, which golden tests pin down (testdata/*.in.yaml →
// *.out.yaml, regenerated with `go test ./controllers/translate -update`).
//
// # Stages
//
// Begin runs the first stage, whose statuses (Pass.Early) are final when it returns; Finish runs
// the second. Each step reads the snapshot (through index, which files objects by
// cluster/namespace/name) and what earlier steps left on the translator:
//
//  1. Classes (class.go): GatewayClasses and their GatewayClassConfigs → classInfo per class
//     (provider, scope, the provider's parameters as JSON, proxy policy, and the provider's
//     Capabilities from the Catalog option, everything without one); writes GatewayClass statuses.
//  2. Policies (backendtls.go): BackendTLSPolicies and their CA ConfigMaps → tlsPolicy per
//     target, winner first; their ancestors are filled in as routes attach.
//  3. Gateway groups (gateway.go, listener.go, gatewaytls.go): Gateways of our classes, their
//     certificate Secrets, ReferenceGrants and namespaces → gatewayGroup per key, holding each
//     Gateway (gatewayObject) and the merged listeners with their verdicts (protocol, route
//     kinds and certificates per listener checked against the provider's Capabilities).
//  4. Listener sets (listenerset.go): ListenerSets → their listeners, added to the group they
//     attach to.
//  5. Route compile and attach (route.go, http.go, grpc.go, l4.go, backend.go, filters.go): every
//     route → route, once per object and independent of its parents (the memo may hand back one
//     compiled earlier), with backends resolved through Services, EndpointSlices, ServiceImports,
//     ServiceExports and ReferenceGrants; then attached per parentRef to the listeners that take
//     it. A rule the parent's provider cannot express (Capabilities) or whose regex exceeds the
//     class's bound is dropped for that parent only (PartiallyInvalid, or Accepted=False when no
//     rule is left), as is a route over the provider's rules or hostnames per listener.
//  6. Route statuses (route.go): one RouteParentStatus per parentRef of ours → Result.Routes.
//  7. Policy statuses (backendtls.go): BackendTLSPolicy ancestors → Result.Policies.
//     (End of Begin.)
//  8. Ingress (ingress.go, ingress_rules.go): IngressClasses, Ingresses, their Services and TLS
//     Secrets → one group per class; settles path conflicts with older HTTPRoutes, removing the
//     HTTPRoute matches that lose from their routes before the configs are built.
//  9. Gateway and ListenerSet statuses (gateway.go, listenerset.go): the verdicts and attached
//     route counts → Result.Gateways and ListenerSets, Programmed left Pending.
//  10. Configs (build.go): each accepted group's listeners and attached routes → one ir.Config
//     (listeners merged by port, virtual hosts, routes in precedence order) → Result.Configs;
//     the memo hands back a virtual host's routes when its matches did not change.
//  11. Load balancers (build.go): the group, its config and its oldest valid Gateway → one
//     providers.LoadBalancer per config, in the same order, → Result.LoadBalancers.
//  12. Ingress and LB Services (ingress.go, lbservice.go): each Ingress group, and each
//     LoadBalancer Service of our classes (with its EndpointSlices), → a config, a model and
//     Result.Ingresses / Result.Services.
//  13. Routing: once Configs is final, each model's Routing points at its config.
//
// Notices (Events) are added by any step. Memo (memo.go) carries compiled routes and virtual
// hosts from one pass to the next: a route is compiled again only when it or a backend input
// changed (resourceVersions), and the result is always what Translate returns.
//
// # Capabilities
//
// With WithCatalog, each class consults what its provider can express (providers.Capabilities).
// A provider whose Capabilities rejects the class's parameters leaves the GatewayClass not
// Accepted (InvalidParameters) and an IngressClass unserved. A listener protocol it cannot serve
// is Accepted=False/UnsupportedProtocol; a route kind it cannot serve is left out of
// supportedKinds (ResolvedRefs=False/InvalidRouteKinds when allowedRoutes asks for it), so such
// routes get NotAllowedByListeners. A listener with more certificates than it holds (alone, or
// with the listeners merged onto its port) is Accepted=False/UnsupportedValue. A rule it cannot
// express (a match type, or more condition values in a match than it allows) gets reason
// UnsupportedValue with the field named, on that parent only; an Ingress path it cannot express is not served and is
// reported. Without a catalog, or for a provider it does not know, everything is expressible.
//
// # Gateways and keys
//
// A GatewayClass whose GatewayClassConfig has scope Cluster (the default) makes every Gateway its
// own gateway, keyed "cluster/namespace/name". Scope Fleet merges the Gateways with the same
// namespace/name in every member into one gateway keyed "namespace/name": listeners are merged by
// name, the oldest Gateway's definition wins, and a member whose listener of the same name differs
// gets Conflicted on it. Routes from any member attach to a fleet gateway (namespace sameness).
//
// # Backends
//
// A Service backendRef resolves in the route's own cluster, through the EndpointSlices labelled
// kubernetes.io/service-name with that Service's name; the target port is the EndpointSlice port
// named like the Service port; only ready endpoints (ready unset counts as ready) are used.
// Only slices with endpointslice.kubernetes.io/managed-by endpointslice-controller.k8s.io count
// unless the class's GatewayClassConfig sets spec.proxy.trustAllEndpointSlices, and endpoints in
// its spec.proxy.deniedEndpointCIDRs (default: loopback, link-local, cloud metadata) are dropped;
// both are named in the route's ResolvedRefs message, which stays True (a Service left without
// endpoints is served like one that has none). A route attached to Gateways of several classes
// gets the stricter of their policies.
// A ServiceImport backendRef needs the ServiceImport in the route's cluster; its endpoints are
// those of the same-named Service in every cluster of the snapshot that has a ServiceExport for
// it, resolved the same way (ServiceImport port → Service port of the same name → slice port).
// Unresolvable backendRefs become ir.Backend{Invalid: true}: their weighted share answers 500.
//
// # Status and the Programmed merge
//
// Conditions carry observedGeneration = metadata.generation and a zero lastTransitionTime (no
// clock here; the status writer stamps it on change). Route statuses hold only our
// RouteParentStatus entries (controllerName fleetgate.dev/gateway-controller); the writer merges
// them with other controllers' entries. Translation cannot know whether the load balancer is up
// or the proxies ACKed, so valid Gateways and listeners get Programmed=False/Pending and invalid
// ones Programmed=False/Invalid. After apply, the controller calls
// Result.SetProgrammed(gatewayKey, Programmed{Ready, Reason, Message, Addresses}) — also pure —
// which turns Pending into True/Programmed (or the given reason) and sets the addresses, and
// Result.SetLoadBalancerStatus with the same value for the Ingresses and Services it serves.
package translate
