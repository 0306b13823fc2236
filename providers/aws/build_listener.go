package aws

import (
	"fmt"
	"strconv"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

func listenerID(port uint32) string { return "listener/" + strconv.Itoa(int(port)) }

// applicationListeners builds one ALB listener per IR listener, answering 404 when no rule
// matches (the Gateway API's answer to a request no route takes), and its rules.
func (b *builder) applicationListeners(s *Stack) error {
	for i := range b.lb.Routing.Listeners {
		l := &b.lb.Routing.Listeners[i]
		if l.Protocol != ir.ProtocolHTTP && l.Protocol != ir.ProtocolHTTPS {
			return fmt.Errorf("listener %d: protocol %s needs a network load balancer: %w", l.Port, l.Protocol, errUnsupported)
		}
		if l.ClientValidation != nil {
			return fmt.Errorf("listener %d: client certificate validation: %w", l.Port, errUnsupported)
		}
		out := Listener{ID: listenerID(l.Port), Port: int32(l.Port), Protocol: string(l.Protocol), DefaultAction: fixed("404")}
		if l.Protocol == ir.ProtocolHTTPS {
			var err error
			if out.Certificates, err = b.listenerCertificates(l); err != nil {
				return err
			}
			out.SSLPolicy = b.sslPolicy()
		}
		s.Listeners = append(s.Listeners, out)
		if err := b.applicationRules(s, l, out.ID); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) sslPolicy() string {
	if b.o.SSLPolicy == "" {
		return defaultSSLPolicy
	}
	return b.o.SSLPolicy
}
