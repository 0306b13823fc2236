package gcp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

// Ports a global external Application Load Balancer's forwarding rules take (compute v1
// reference, ForwardingRule.portRange: "external HTTP(S) load balancers: 80, 8080 for HTTP,
// 443 for HTTPS"); regional ones take any.
var globalPorts = map[ir.Protocol][]uint32{ir.ProtocolHTTP: {80, 8080}, ir.ProtocolHTTPS: {443}}

// application builds an Application Load Balancer: per HTTP(S) listener a URL map, a target
// proxy and a forwarding rule on the shared address.
func (b *builder) application() error {
	var ip string
	for _, l := range b.lb.Routing.Listeners {
		if l.Protocol != ir.ProtocolHTTP && l.Protocol != ir.ProtocolHTTPS {
			b.note("listener %s: %s is not served by an Application Load Balancer", l.Name, l.Protocol)
			continue
		}
		if ports := globalPorts[l.Protocol]; b.s.Region == "" && !containsPort(ports, l.Port) {
			b.note("listener %s: a global load balancer serves %s on ports %v only", l.Name, l.Protocol, ports)
			continue
		}
		if len(l.SourceRanges) > 0 {
			// Allowing everyone instead would open what the listener closes: it is not served.
			b.note("listener %s: source ranges need a Cloud Armor policy, which fleetgate does not manage; not served", l.Name)
			continue
		}
		if l.ClientValidation != nil {
			b.note("listener %s: client certificate validation needs a server TLS policy, which fleetgate does not manage; not served", l.Name)
			continue
		}
		if ip == "" {
			var err error
			if ip, err = b.address(); err != nil {
				return err
			}
		}
		port := strconv.FormatUint(uint64(l.Port), 10)
		urlMap := b.urlMap(&l)
		var target string
		if l.Protocol == ir.ProtocolHTTPS {
			certs := b.certificates(&l)
			if len(certs) == 0 {
				b.note("listener %s: no certificate; not served", l.Name)
				continue
			}
			target = b.add(KindTargetHTTPSProxy, b.scope(), "https/"+port, nil,
				&computepb.TargetHttpsProxy{UrlMap: &urlMap, SslCertificates: certs})
		} else {
			target = b.add(KindTargetHTTPProxy, b.scope(), "http/"+port, nil, &computepb.TargetHttpProxy{UrlMap: &urlMap})
		}
		fr := &computepb.ForwardingRule{
			IPAddress:           &ip,
			IPProtocol:          proto.String("TCP"),
			PortRange:           proto.String(port),
			LoadBalancingScheme: proto.String("EXTERNAL_MANAGED"),
			Target:              &target,
			Labels:              b.s.Labels,
		}
		if b.s.Region != "" {
			// A regional Application Load Balancer lives in a VPC network (and its proxy-only subnet).
			fr.Network = proto.String(b.network(""))
			fr.NetworkTier = proto.String("PREMIUM")
		}
		b.add(KindForwardingRule, b.scope(), "fr/"+port, nil, fr)
	}
	return nil
}

func containsPort(ports []uint32, p uint32) bool {
	for _, q := range ports {
		if q == p {
			return true
		}
	}
	return false
}

// certificates are the listener's certificates as self-managed SSL certificates. The name hashes
// the PEM, so a rotated certificate is a new resource: the proxy moves to it, then the old one goes.
func (b *builder) certificates(l *ir.Listener) []string {
	var links []string
	for _, c := range l.Certificates {
		sum := sha256.Sum256(append(append([]byte{}, c.CertPEM...), c.KeyPEM...))
		id := "cert/" + hex.EncodeToString(sum[:8])
		links = append(links, b.add(KindSSLCertificate, b.scope(), id, nil,
			&computepb.SslCertificate{Certificate: proto.String(string(c.CertPEM)), PrivateKey: proto.String(string(c.KeyPEM))}))
		if len(links) == maxCertificates {
			if rest := len(l.Certificates) - maxCertificates; rest > 0 {
				b.note("listener %s: %d certificates left out, a target HTTPS proxy takes %d", l.Name, rest, maxCertificates)
			}
			break
		}
	}
	return links
}

// network is the URL of the VPC network of a member's endpoints ("" for the class's own).
func (b *builder) network(cluster string) string {
	n := b.o.Network
	if m, ok := b.members[cluster]; ok && m.Network != "" {
		n = m.Network
	}
	return networkLink(b.s.Project, n)
}

// networkLink makes a network name, partial URL or URL a full URL.
func networkLink(project, n string) string {
	switch {
	case len(n) > 8 && (n[:8] == "https://" || n[:7] == "http://"):
		return n
	case len(n) > 9 && n[:9] == "projects/":
		return apiBase + n
	}
	return fmt.Sprintf("%sprojects/%s/global/networks/%s", apiBase, project, n)
}
