// Package translate turns a snapshot into everything fleetgate does about it: one dataplane
// config (ir.Config) and one load-balancer model (providers.LoadBalancer) per gateway, and the
// status conditions of every GatewayClass, Gateway and route of our controller.
//
// Translate is pure: no context, client, clock, network, cloud SDK or randomness. The same
// snapshot always yields the same Result, which golden tests pin down (testdata/*.in.yaml →
// *.out.yaml, regenerated with `go test ./controllers/translate -update`).
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
// which turns Pending into True/Programmed (or the given reason) and sets the addresses.
package translate
