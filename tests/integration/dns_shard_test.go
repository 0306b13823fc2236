package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	dnsv1a1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// longName is a DNS name of 250 characters, unique for (i, j): real-world names are long, and
// long names reach etcd's limit with few routes.
func longName(i, j int) string {
	label := func(c byte) string { return strings.Repeat(string(c), 63) }
	return fmt.Sprintf("r%03d-%02d.%s.%s.%s.example.com", i, j, label('a'), label('b'), label('c')[:63-5])
}

// TestDNSEndpointsOverEtcdLimit: a Gateway whose routes hold 6,400 names of 250 characters (400
// HTTPRoutes of 16 hostnames, the most a route may have) has ~1.9 MB of records, over etcd's
// 1.5 MiB request limit of the real API server here: as one DNSEndpoint its write was refused
// ("etcdserver: request is too large") and no name was published. Sharded, every name is in one
// of several DNSEndpoints, each under the bounds, all with the gateway's labels and owner; a route
// more rewrites one of them, and with few routes left only the first remains.
func TestDNSEndpointsOverEtcdLimit(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx, cl := t.Context(), c.Client
	for _, ns := range []string{cloudNamespace, operatorNamespace} {
		must(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	registry := providers.NewRegistry()
	registry.Register("incluster", &configMapProvider{c: cl})
	delivery := controllers.NewTrigger()
	runOperator(t, c, testr.NewWithOptions(t, testr.Options{Verbosity: 0}), controllers.Options{
		Registry: prometheus.NewRegistry(),
		Apply: &controllers.Dataplane{Providers: registry, Configs: newAckingConfigs(func() { delivery.Fire("") }),
			Delivered: delivery.Fire},
		Delivery: delivery,
		DNS:      &controllers.DNSOptions{Namespace: operatorNamespace, Recheck: 500 * time.Millisecond},
	})
	must(t, testbed.CreateClass(ctx, cl, "lb", v1alpha1.ScopeCluster))
	for _, obj := range testbed.Published("default", "web", "198.18.0.1", 8080) {
		must(t, cl.Create(ctx, obj))
	}
	createGateway(t, cl, "gw", "lb")
	const routes, perRoute = 400, 16
	var want []string
	for i := range routes {
		r := httpRoute(fmt.Sprintf("r%03d", i), longName(i, 0), "web")
		want = append(want, longName(i, 0))
		for j := 1; j < perRoute; j++ {
			r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(longName(i, j)))
			want = append(want, longName(i, j))
		}
		must(t, cl.Create(ctx, r))
	}
	slices.Sort(want)

	// published waits until the gateway's DNSEndpoints hold exactly want and it says so.
	published := func(want []string) []dnsv1a1.DNSEndpoint {
		t.Helper()
		var shards []dnsv1a1.DNSEndpoint
		testbed.Eventually(t, 120*time.Second, func() error {
			var gw gwv1.Gateway
			if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gw"}, &gw); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(gw.Status.Conditions, controllers.ConditionDNSPublished)
			if cond == nil || cond.Reason != controllers.ReasonDNSPublished || !strings.Contains(cond.Message, fmt.Sprintf("and %d more", len(want)-5)) {
				return fmt.Errorf("DNSPublished %+v, want Published for %d names", cond, len(want))
			}
			var list dnsv1a1.DNSEndpointList
			if err := cl.List(ctx, &list, client.MatchingLabels{providers.LabelGateway: providers.GatewayID("hub/default/gw")}); err != nil {
				return err
			}
			var got []string
			for _, s := range list.Items {
				for _, ep := range s.Spec.Endpoints {
					got = append(got, ep.DNSName)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return fmt.Errorf("the DNSEndpoints hold %d names, want the %d of the routes", len(got), len(want))
			}
			shards = list.Items
			return nil
		})
		return shards
	}
	shards := published(want)
	total := 0
	for _, s := range shards {
		if n := len(s.Spec.Endpoints); n > controllers.DefaultDNSShardRecords {
			t.Errorf("%s holds %d records, over %d", s.Name, n, controllers.DefaultDNSShardRecords)
		}
		if s.Namespace != "default" || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Name != "gw" ||
			s.Annotations[providers.AnnotationGateway] != "hub/default/gw" {
			t.Errorf("%s/%s: owners %+v, annotations %v: want in default, owned by Gateway gw", s.Namespace, s.Name, s.OwnerReferences, s.Annotations)
		}
		b, err := json.Marshal(s)
		must(t, err)
		total += len(b)
	}
	t.Logf("6,400 names of 250 characters: %d DNSEndpoints, %d bytes together", len(shards), total)

	t.Run("a route more rewrites one DNSEndpoint", func(t *testing.T) {
		versions := map[string]string{}
		for _, s := range shards {
			versions[s.Name] = s.ResourceVersion
		}
		must(t, cl.Create(ctx, httpRoute("extra", longName(999, 0), "web")))
		now := published(slices.Sorted(slices.Values(append(slices.Clone(want), longName(999, 0)))))
		var changed []string
		for _, s := range now {
			if versions[s.Name] != s.ResourceVersion {
				changed = append(changed, s.Name)
			}
		}
		if len(now) != len(shards) || len(changed) != 1 {
			t.Errorf("%d DNSEndpoints (were %d), rewritten: %v; want one rewritten", len(now), len(shards), changed)
		}
	})

	t.Run("fewer routes: one DNSEndpoint again, the first", func(t *testing.T) {
		must(t, cl.Delete(ctx, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "extra"}}))
		for i := 10; i < routes; i++ {
			must(t, cl.Delete(ctx, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("r%03d", i)}}))
		}
		var few []string
		for _, n := range want {
			if n < "r010" {
				few = append(few, n)
			}
		}
		now := published(few)
		var names []string
		for _, s := range now {
			names = append(names, s.Name)
		}
		if len(names) != 1 || strings.Count(names[0], "-") != 2 {
			t.Errorf("DNSEndpoints %v, want only the first, fleetgate-gw-<hash>", names)
		}
	})
}
