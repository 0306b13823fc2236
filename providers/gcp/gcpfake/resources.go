package gcpfake

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Test ranges (RFC 5737) the fake allocates addresses from, lowest free first.
const (
	globalRange   = "203.0.113."
	regionalRange = "198.51.100."
)

// view returns a copy of a stored resource with the fields the server derives on read.
func (s *Server) view(key string, m proto.Message) proto.Message {
	out := proto.Clone(m)
	switch v := out.(type) {
	case *computepb.Address:
		v.Users = s.addressUsers(key, v)
		v.Status = proto.String("RESERVED")
		if len(v.Users) > 0 {
			v.Status = proto.String("IN_USE")
		}
	case *computepb.NetworkEndpointGroup:
		v.Size = proto.Int32(int32(len(s.endpoints[key])))
	}
	return out
}

// addressUsers lists the forwarding rules in the address's project and scope that use its IP.
func (s *Server) addressUsers(key string, a *computepb.Address) []string {
	scope, _, _ := splitKey(key)
	prefix := resKey(strings.Split(key, "/")[1], scope, "forwardingRules", "")
	var users []string
	for _, k := range sortedKeys(s.res) {
		if fr, ok := s.res[k].(*computepb.ForwardingRule); ok && strings.HasPrefix(k, prefix) && fr.GetIPAddress() == a.GetAddress() {
			users = append(users, Link(k))
		}
	}
	return users
}

// allocate returns the lowest address of the scope's test range that no address or forwarding
// rule of the project holds (regional ranges are shared by all regions of a project).
func (s *Server) allocate(project, scope string) (string, *apiError) {
	prefix, global := regionalRange, scope == "global"
	if global {
		prefix = globalRange
	}
	used := map[string]bool{}
	for k, m := range s.res {
		sc, _, _ := splitKey(k)
		if !strings.HasPrefix(k, "projects/"+project+"/") || (sc == "global") != global {
			continue
		}
		switch v := m.(type) {
		case *computepb.Address:
			used[v.GetAddress()] = true
		case *computepb.ForwardingRule:
			used[v.GetIPAddress()] = true
		}
	}
	for i := 1; i < 255; i++ {
		if ip := prefix + strconv.Itoa(i); !used[ip] {
			return ip, nil
		}
	}
	return "", errorf(http.StatusForbidden, "quotaExceeded", "gcpfake: the test range %s0/24 is exhausted", prefix)
}

func prepareAddress(s *Server, req *request, m proto.Message) *apiError {
	a := m.(*computepb.Address)
	a.Status, a.Users = nil, nil
	if a.AddressType == nil {
		a.AddressType = proto.String("EXTERNAL") // reference default
	}
	if a.GetAddress() == "" {
		ip, err := s.allocate(req.project, req.scope)
		a.Address = proto.String(ip)
		return err
	}
	if _, err := netip.ParseAddr(a.GetAddress()); err != nil {
		return errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.address': '%s'. Must be an IP address.", a.GetAddress())
	}
	for _, k := range sortedKeys(s.res) {
		if other, ok := s.res[k].(*computepb.Address); ok && strings.HasPrefix(k, "projects/"+req.project+"/") && other.GetAddress() == a.GetAddress() {
			return errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.address': '%s'. The address is already reserved by '%s'.", a.GetAddress(), k)
		}
	}
	return nil
}

// prepareForwardingRule resolves IPAddress: empty takes an ephemeral address from the test range,
// an IP is kept, an address reference (full or partial) takes that address's IP, as GCE stores it.
func prepareForwardingRule(s *Server, req *request, m proto.Message) *apiError {
	fr := m.(*computepb.ForwardingRule)
	ip := fr.GetIPAddress()
	if ip == "" {
		ip, err := s.allocate(req.project, req.scope)
		fr.IPAddress = proto.String(ip)
		return err
	}
	if _, err := netip.ParseAddr(ip); err == nil {
		return nil
	}
	key, ok := parseLink(req.project, ip)
	scope, coll, _ := splitKey(key)
	if !ok || coll != "addresses" || scope != req.scope {
		return errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.IPAddress': '%s'. Must be an IP address or an address in %s.", ip, req.scope)
	}
	a, ok := s.res[key].(*computepb.Address)
	if !ok {
		return notFoundError(key)
	}
	fr.IPAddress = proto.String(a.GetAddress())
	return nil
}

func prepareNEG(_ *Server, req *request, m proto.Message) *apiError {
	neg := m.(*computepb.NetworkEndpointGroup)
	neg.Size = nil
	if neg.NetworkEndpointType == nil {
		neg.NetworkEndpointType = proto.String("GCE_VM_IP_PORT") // reference default
	}
	switch neg.GetNetworkEndpointType() {
	case "GCE_VM_IP_PORT":
	case "GCE_VM_IP":
		// Reference (defaultPort): "If the network endpoint type is either GCE_VM_IP, SERVERLESS
		// or PRIVATE_SERVICE_CONNECT, this field must not be specified."
		if neg.DefaultPort != nil {
			return errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.defaultPort': '%d'. defaultPort must not be set for GCE_VM_IP.", neg.GetDefaultPort())
		}
	default:
		return errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.networkEndpointType': '%s'. gcpfake models GCE_VM_IP_PORT and GCE_VM_IP.", neg.GetNetworkEndpointType())
	}
	// Reference (network): "Uses default project network if unspecified."
	if neg.Network == nil {
		neg.Network = proto.String("global/networks/default")
	}
	for field, p := range map[string]*string{"network": neg.Network, "subnetwork": neg.Subnetwork} {
		if p == nil {
			continue
		}
		key, ok := parseLink(req.project, *p)
		if !ok {
			return errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.%s': '%s'. The URL is malformed.", field, *p)
		}
		*p = Link(key)
	}
	return nil
}

// endpointID identifies an endpoint within a NEG: its IP and effective port.
func endpointID(neg *computepb.NetworkEndpointGroup, ep *computepb.NetworkEndpoint) (string, int32) {
	port := ep.GetPort()
	if ep.Port == nil && neg.GetNetworkEndpointType() == "GCE_VM_IP_PORT" {
		port = neg.GetDefaultPort()
	}
	return ep.GetIpAddress() + ":" + strconv.Itoa(int(port)), port
}

func attachEndpoints(s *Server, req *request, next, body proto.Message) (func(), *apiError) {
	neg := next.(*computepb.NetworkEndpointGroup)
	eps := append([]*computepb.NetworkEndpoint(nil), s.endpoints[req.key()]...)
	have := map[string]bool{}
	for _, ep := range eps {
		id, _ := endpointID(neg, ep)
		have[id] = true
	}
	for i, in := range body.(*computepb.NetworkEndpointGroupsAttachEndpointsRequest).GetNetworkEndpoints() {
		invalid := func(field, why string, v any) *apiError {
			return errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.networkEndpoints[%d].%s': '%v'. %s", i, field, v, why)
		}
		ep := proto.CloneOf(in)
		// Reference (NetworkEndpoint.instance): "The field is required for network endpoints of
		// type GCE_VM_IP and GCE_VM_IP_PORT."
		if ep.GetInstance() == "" {
			return nil, invalid("instance", "An instance is required for "+neg.GetNetworkEndpointType()+" endpoints.", "")
		}
		// GCE would take the instance's primary IP; the fake has no instances, so it requires one.
		if addr, err := netip.ParseAddr(ep.GetIpAddress()); err != nil || !addr.Is4() {
			return nil, invalid("ipAddress", "gcpfake requires the endpoint's IPv4 address.", ep.GetIpAddress())
		}
		id, port := endpointID(neg, ep)
		switch {
		case neg.GetNetworkEndpointType() == "GCE_VM_IP" && ep.Port != nil:
			// Reference (port): "This field can not be set for network endpoints of type GCE_VM_IP."
			return nil, invalid("port", "port can not be set for GCE_VM_IP endpoints.", ep.GetPort())
		case neg.GetNetworkEndpointType() == "GCE_VM_IP_PORT" && (port <= 0 || port > 65535):
			return nil, invalid("port", "A port is required when the network endpoint group has no defaultPort.", port)
		case have[id]:
			return nil, invalid("ipAddress", "The network endpoint already exists in the network endpoint group.", id)
		}
		if neg.GetNetworkEndpointType() == "GCE_VM_IP_PORT" {
			ep.Port = proto.Int32(port)
		}
		have[id] = true
		eps = append(eps, ep)
	}
	return func() { s.endpoints[req.key()] = eps }, nil
}

func detachEndpoints(s *Server, req *request, next, body proto.Message) (func(), *apiError) {
	neg := next.(*computepb.NetworkEndpointGroup)
	eps := append([]*computepb.NetworkEndpoint(nil), s.endpoints[req.key()]...)
	for i, ep := range body.(*computepb.NetworkEndpointGroupsDetachEndpointsRequest).GetNetworkEndpoints() {
		id, _ := endpointID(neg, ep)
		found := -1
		for j, have := range eps {
			if hid, _ := endpointID(neg, have); hid == id {
				found = j
			}
		}
		if found < 0 {
			return nil, errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.networkEndpoints[%d]': '%s'. The network endpoint does not exist in the network endpoint group.", i, id)
		}
		eps = append(eps[:found], eps[found+1:]...)
	}
	return func() { s.endpoints[req.key()] = eps }, nil
}

// prepareCertificate checks a self-managed certificate the way GCE does (the PEM chain and key must
// parse and match), fills subjectAlternativeNames and expireTime from it, and drops the private key,
// which the reference marks input-only. Managed certificates become ACTIVE at once.
func prepareCertificate(_ *Server, _ *request, m proto.Message) *apiError {
	c := m.(*computepb.SslCertificate)
	c.ExpireTime, c.SubjectAlternativeNames = nil, nil
	if c.GetType() == "MANAGED" {
		if len(c.GetManaged().GetDomains()) == 0 {
			return errorf(http.StatusBadRequest, "invalid", "Invalid value for field 'resource.managed.domains': ''. At least one domain is required.")
		}
		c.Managed.Status = proto.String("ACTIVE")
		return nil
	}
	c.Type = proto.String("SELF_MANAGED")
	pair, err := tls.X509KeyPair([]byte(c.GetCertificate()), []byte(c.GetPrivateKey()))
	if err != nil {
		return errorf(http.StatusBadRequest, "invalid", "The SSL certificate and key pair is invalid: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return errorf(http.StatusBadRequest, "invalid", "The SSL certificate could not be parsed: %v", err)
	}
	c.PrivateKey = nil
	c.SubjectAlternativeNames = leaf.DNSNames
	c.ExpireTime = proto.String(leaf.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// mergePatch applies a PATCH body to cur as an RFC 7396 JSON merge patch.
func mergePatch(cur proto.Message, body []byte) (proto.Message, *apiError) {
	var patch map[string]any
	if err := json.Unmarshal(body, &patch); err != nil {
		return nil, errorf(http.StatusBadRequest, "parseError", "Invalid JSON payload received. %v", err)
	}
	b, err := protojson.Marshal(cur)
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, "backendError", "marshal: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, errorf(http.StatusInternalServerError, "backendError", "unmarshal: %v", err)
	}
	merge(doc, patch)
	if b, err = json.Marshal(doc); err != nil {
		return nil, errorf(http.StatusInternalServerError, "backendError", "marshal: %v", err)
	}
	next := cur.ProtoReflect().New().Interface()
	return next, unmarshal(b, next)
}

func merge(dst, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(dst, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, pm)
				continue
			}
		}
		dst[k] = v
	}
}

// fingerprint is a deterministic 8-byte base64 value, the form GCE's fingerprints have.
func fingerprint(key string, seq uint64) string {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write(binary.BigEndian.AppendUint64(nil, seq))
	return base64.StdEncoding.EncodeToString(h.Sum(nil)[:8])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The compute resources share field names (name, selfLink, fingerprint, …); these helpers reach
// them through reflection so that the store can treat every kind alike.

func field(m proto.Message, jsonName string) protoreflect.FieldDescriptor {
	return m.ProtoReflect().Descriptor().Fields().ByJSONName(jsonName)
}

func hasField(m proto.Message, jsonName string) bool { return field(m, jsonName) != nil }

func getString(m proto.Message, jsonName string) string {
	if fd := field(m, jsonName); fd != nil && m.ProtoReflect().Has(fd) {
		return m.ProtoReflect().Get(fd).String()
	}
	return ""
}

func getUint(m proto.Message, jsonName string) uint64 {
	if fd := field(m, jsonName); fd != nil {
		return m.ProtoReflect().Get(fd).Uint()
	}
	return 0
}

func setString(m proto.Message, jsonName, v string) {
	if fd := field(m, jsonName); fd != nil {
		m.ProtoReflect().Set(fd, protoreflect.ValueOfString(v))
	}
}

func setUint(m proto.Message, jsonName string, v uint64) {
	if fd := field(m, jsonName); fd != nil {
		m.ProtoReflect().Set(fd, protoreflect.ValueOfUint64(v))
	}
}

func clearField(m proto.Message, jsonName string) {
	if fd := field(m, jsonName); fd != nil {
		m.ProtoReflect().Clear(fd)
	}
}

// copyField sets dst's field to src's (clearing it when src has none).
func copyField(dst, src proto.Message, jsonName string) {
	fd := field(dst, jsonName)
	if fd == nil {
		return
	}
	if !src.ProtoReflect().Has(fd) {
		dst.ProtoReflect().Clear(fd)
		return
	}
	dst.ProtoReflect().Set(fd, src.ProtoReflect().Get(fd))
}
