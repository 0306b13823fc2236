package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	dnspub "github.com/fleetgate/fleetgate/providers/dns"
	"github.com/fleetgate/fleetgate/providers/dns/bindtest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestDNSEmbeddedRFC2136: a class whose GatewayClassConfig has spec.dns (RFC 2136 to a real
// BIND9 with TSIG) gets its Gateways' hostnames into the zone without external-dns: the CNAME to
// the ALB answers soon after the Gateway is Programmed, a record fleetgate did not create is never
// touched, deleting the Gateway removes its records, and so do narrowing spec.dns's zones (for the
// names left outside them) and removing spec.dns, even while no operator runs.
func TestDNSEmbeddedRFC2136(t *testing.T) {
	bind := bindtest.Require(t, "example.test", "untouched 300 IN A 192.0.2.99")
	var e *awsEnv
	pubs := dnspub.NewPublishers(dnspub.Options{FleetID: "dns-fleet", Log: testr.New(t),
		Secrets: func(ctx context.Context, ns, name string) (map[string][]byte, error) {
			var s corev1.Secret
			err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)
			return s.Data, err
		}})
	e = newDNSEnv(t, testbed.Options{}, pubs)
	ctx, cl := t.Context(), e.c.Client
	must(t, cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "tsig"},
		Data: map[string][]byte{"secret": []byte(bind.Secret)}}))
	var alb v1alpha1.GatewayClassConfig
	must(t, cl.Get(ctx, client.ObjectKey{Name: "aws-alb"}, &alb))
	must(t, cl.Create(ctx, &v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: "aws-dns"},
		Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderAWS, AWS: alb.Spec.AWS, DNS: &v1alpha1.DNSOptions{
			Provider: v1alpha1.DNSProviderRFC2136, Zones: []string{"example.test"},
			RFC2136: &v1alpha1.DNSRFC2136{Host: bind.Host, Port: int32(bind.Port), Zone: bind.Zone, TSIGKeyName: bindtest.KeyName,
				TSIGSecretRef: v1alpha1.ObjectRef{Namespace: operatorNamespace, Name: "tsig"}}}}}))
	must(t, cl.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "aws-dns"},
		Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
			ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "aws-dns"}}}))
	gw := albGateway("edge", "")
	gw.Spec.GatewayClassName = "aws-dns"
	must(t, cl.Create(ctx, gw))
	must(t, cl.Create(ctx, routeTo("edge", "edge", "www.example.test")))
	albDNS := e.gatewayAddress("edge")
	programmed := time.Now()
	cname := func(name string) string {
		rrs, err := bind.Query(name, mdns.TypeCNAME)
		if err != nil || len(rrs) == 0 {
			return ""
		}
		if c, ok := rrs[0].(*mdns.CNAME); ok {
			return strings.TrimSuffix(c.Target, ".")
		}
		return ""
	}
	testbed.Eventually(t, 30*time.Second, func() error {
		if got := cname("www.example.test"); got != albDNS {
			return fmt.Errorf("www.example.test CNAME = %q, want %q", got, albDNS)
		}
		return nil
	})
	t.Logf("www.example.test resolved to the ALB %s after Programmed", time.Since(programmed).Round(time.Millisecond))
	e.dnsCondition("edge", metav1.ConditionTrue, controllers.ReasonDNSPublished,
		"published www.example.test in zone example.test (rfc2136)", "it serves them")

	// A hostname held by a record fleetgate did not create: told on the Gateway (condition and
	// Event), never overwritten, and the other names stay published.
	must(t, cl.Create(ctx, routeTo("taken", "edge", "untouched.example.test")))
	e.dnsCondition("edge", metav1.ConditionFalse, controllers.ReasonDNSConflicted,
		"untouched.example.test is not published", "fleetgate did not create", "published www.example.test")
	testbed.Eventually(t, 30*time.Second, func() error {
		var evs eventsv1.EventList
		if err := cl.List(ctx, &evs, client.InNamespace("default")); err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Reason == controllers.ReasonDNSConflict && ev.Regarding.Name == "edge" && strings.Contains(ev.Note, "untouched.example.test") {
				return nil
			}
		}
		return fmt.Errorf("no %s Event on edge among %d", controllers.ReasonDNSConflict, len(evs.Items))
	})
	if rrs, err := bind.Query("untouched.example.test", mdns.TypeA); err != nil || len(rrs) != 1 || rrs[0].(*mdns.A).A.String() != "192.0.2.99" {
		t.Errorf("the record fleetgate did not create: %v, %v", rrs, err)
	}
	if got := cname("www.example.test"); got != albDNS {
		t.Errorf("www.example.test CNAME = %q after the conflict, want %q", got, albDNS)
	}

	must(t, cl.Delete(ctx, gw))
	testbed.Eventually(t, 30*time.Second, func() error {
		if got := cname("www.example.test"); got != "" {
			return fmt.Errorf("www.example.test still CNAME %s", got)
		}
		return nil
	})
	if rrs, err := bind.Query("untouched.example.test", mdns.TypeA); err != nil || len(rrs) != 1 {
		t.Errorf("after the delete, the record fleetgate did not create: %v, %v", rrs, err)
	}

	// The config stops publishing (its spec.dns removed; a config that leaves the fleet with its
	// member is the same to the publisher): the records fleetgate published there are removed,
	// though their gateway stays, and nobody else's.
	gw2 := albGateway("shop", "")
	gw2.Spec.GatewayClassName = "aws-dns"
	must(t, cl.Create(ctx, gw2))
	must(t, cl.Create(ctx, routeTo("shop", "shop", "shop.example.test")))
	shopDNS := e.gatewayAddress("shop")
	testbed.Eventually(t, 30*time.Second, func() error {
		if got := cname("shop.example.test"); got != shopDNS {
			return fmt.Errorf("shop.example.test CNAME = %q, want %q", got, shopDNS)
		}
		return nil
	})

	// The config narrows its zones to api.example.test: what it published outside them is removed,
	// and what it publishes under them stays.
	must(t, cl.Create(ctx, routeTo("shop-api", "shop", "v1.api.example.test")))
	testbed.Eventually(t, 30*time.Second, func() error {
		if got := cname("v1.api.example.test"); got != shopDNS {
			return fmt.Errorf("v1.api.example.test CNAME = %q, want %q", got, shopDNS)
		}
		return nil
	})
	var cfg v1alpha1.GatewayClassConfig
	must(t, cl.Get(ctx, client.ObjectKey{Name: "aws-dns"}, &cfg))
	cfg.Spec.DNS.Zones = []string{"api.example.test"}
	must(t, cl.Update(ctx, &cfg))
	testbed.Eventually(t, 30*time.Second, func() error {
		if got := cname("shop.example.test"); got != "" {
			return fmt.Errorf("shop.example.test still CNAME %s after its zone left spec.dns", got)
		}
		return nil
	})
	e.dnsCondition("shop", metav1.ConditionFalse, controllers.ReasonDNSRefused,
		"shop.example.test cannot be published", "published v1.api.example.test in zone api.example.test")
	if got := cname("v1.api.example.test"); got != shopDNS {
		t.Errorf("v1.api.example.test CNAME = %q after the zones narrowed, want %q", got, shopDNS)
	}

	// spec.dns is removed while no operator runs: the next one finds where the config published
	// in its ledger, and removes the records.
	var ledger corev1.ConfigMap
	must(t, cl.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: controllers.DNSLedgerName}, &ledger))
	if !strings.Contains(ledger.Data["published.json"], `"config":"aws-dns"`) {
		t.Errorf("the ledger does not hold the config: %s", ledger.Data["published.json"])
	}
	e.stop()
	must(t, cl.Get(ctx, client.ObjectKey{Name: "aws-dns"}, &cfg))
	cfg.Spec.DNS = nil
	must(t, cl.Update(ctx, &cfg))
	e.stop = e.operator()
	testbed.Eventually(t, 30*time.Second, func() error {
		if got := cname("v1.api.example.test"); got != "" {
			return fmt.Errorf("v1.api.example.test still CNAME %s after spec.dns was removed while the operator was down", got)
		}
		return nil
	})
	if rrs, err := bind.Query("untouched.example.test", mdns.TypeA); err != nil || len(rrs) != 1 {
		t.Errorf("after spec.dns was removed, the record fleetgate did not create: %v, %v", rrs, err)
	}
}
