// Package convergence measures how fast fleetgate converges across a fleet (MEMBERS clusters, three
// by default, the hub included): routes added one at a time under live probing, and a cold start.
// Run with `make bench-convergence`; MEMBERS, ROUTES and COLD_ROUTES override the sizes. THEN_ROUTES
// adds that many more routes one at a time after the cold start, which measures a change at the
// cold start's size without adding every route one at a time; COLD_PROFILE=file (with
// FLEETGATE_PPROF) saves a CPU profile of the operator's first COLD_PROFILE_S (20) seconds,
// THEN_PROFILE=file one of THEN_PROFILE_S (30) seconds of those additions, and THEN_HEAP=file its
// heap profile at their end (and FILE.before at their start: pprof -base FILE.before FILE shows what
// the additions allocated). STATUS_WORKERS sets the operator's --status-workers; DURING_ROUTES
// routes added while the cold start's statuses are written measure a change behind that backlog;
// RESTART=1 (with FLEETGATE_METRICS) restarts the operator once more at the end and counts the
// status writes it makes over routes whose statuses are already written. LOG_LEVEL=debug runs the
// operator (and its proxies) with debug logs in JSON, STATE_DIR=dir keeps them there, and
// TRACE_FILE=file gets each added route's timeline to match with them (results/convergence.md, s19).
// memsample.sh OUT, run beside it, samples the operator's memory as the kernel and the Go runtime
// count it (with FLEETGATE_METRICS=127.0.0.1:6080; results/convergence.md, s20 and s21).
package convergence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

func TestMain(m *testing.M) {
	testbed.QuietGlobalLogger()
	os.Exit(m.Run())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func route(i int) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("r%d", i)},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("r%d.example.com", i))},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: "web", Port: ptr.To(gwv1.PortNumber(80))}}}}}},
		},
	}
}

// accepted records when each route was first seen Accepted by our controller, from a watch per cluster.
type accepted struct {
	mu   sync.Mutex
	at   map[string]time.Time
	wait map[string]chan struct{}
}

// watch marks the routes of cluster c that our controller accepted, from a list and then a watch,
// again whenever the API server ends the watch (it drops a watcher that falls behind, which a
// cold start's burst of status writes can make it).
func (a *accepted) watch(ctx context.Context, tb testing.TB, c *testbed.Cluster) {
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: c.Client.Scheme()})
	must(tb, err)
	see := func(r *gwv1.HTTPRoute) {
		for _, p := range r.Status.Parents {
			if p.ControllerName == v1alpha1.ControllerName && meta.IsStatusConditionTrue(p.Conditions, string(gwv1.RouteConditionAccepted)) {
				a.mark(c.Name + "/" + r.Name)
			}
		}
	}
	go func() {
		for ctx.Err() == nil {
			var list gwv1.HTTPRouteList
			if err := wc.List(ctx, &list, client.InNamespace("default")); err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for i := range list.Items {
				see(&list.Items[i])
			}
			w, err := wc.Watch(ctx, &gwv1.HTTPRouteList{}, client.InNamespace("default"), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
			if err != nil {
				continue
			}
			for ev := range w.ResultChan() {
				if r, ok := ev.Object.(*gwv1.HTTPRoute); ok && ev.Type != watch.Deleted {
					see(r)
				}
			}
			w.Stop()
		}
	}()
}

// count is the number of routes seen accepted.
func (a *accepted) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.at)
}

func (a *accepted) mark(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.at[key]; ok {
		return
	}
	a.at[key] = time.Now()
	if ch := a.wait[key]; ch != nil {
		close(ch)
	}
}

func (a *accepted) expect(key string) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := make(chan struct{})
	if _, ok := a.at[key]; ok {
		close(ch)
	} else {
		a.wait[key] = ch
	}
	return ch
}

func get(c *http.Client, addr, host string) int {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func pct(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// BenchmarkConvergence adds ROUTES (3,000) HTTPRoutes one at a time, spread over MEMBERS (3, the hub included) members,
// to a fleet gateway while earlier routes are probed continuously, then restarts the operator with
// COLD_ROUTES (5,000) routes in place.
func BenchmarkConvergence(b *testing.B) {
	routes, cold := envInt("ROUTES", 3000), envInt("COLD_ROUTES", 5000)
	names := []string{"hub"}
	for i := range envInt("MEMBERS", 3) - 1 {
		names = append(names, fmt.Sprintf("member-%d", i+1))
	}
	clusters := testbed.ForTest(b, names...)
	ctx := b.Context()
	binary, err := testbed.BuildOperator(b.TempDir())
	must(b, err)
	stateDir := b.TempDir()
	if d := os.Getenv("STATE_DIR"); d != "" {
		stateDir = d // kept: the operator's and its proxies' logs
	}
	must(b, clusters[0].Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleetgate-system"}}))
	args := []string{"--namespace=fleetgate-system", "--log-level=error"}
	if os.Getenv("LOG_LEVEL") == "debug" {
		args = append(args, "--log-level=debug", "--log-format=json")
	}
	if n := envInt("STATUS_WORKERS", 0); n > 0 {
		args = append(args, fmt.Sprintf("--status-workers=%d", n))
	}
	op, err := testbed.StartOperator(binary, clusters[0], stateDir, args...)
	must(b, err)
	defer func() { _ = op.Stop() }()
	for _, m := range clusters[1:] {
		must(b, testbed.RegisterMember(ctx, clusters[0], m, "fleetgate-system", 100, nil))
	}
	ip := testbed.BackendIP(51)
	remove, err := testbed.AddBackendIP(ip)
	if err != nil {
		b.Skip(err)
	}
	defer func() { _ = remove() }()
	echo, err := testbed.StartEcho("web", net.JoinHostPort(ip, "9080"))
	must(b, err)
	defer echo.Close()
	for _, c := range clusters {
		must(b, c.Client.Create(ctx, &v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
			Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderInCluster, Scope: v1alpha1.ScopeFleet}}))
		must(b, c.Client.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
			Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
				ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "fleet"}}}))
		must(b, c.Client.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}))
		must(b, c.Client.Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](9080)}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}}},
		}))
		must(b, c.Client.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"},
			Spec: gwv1.GatewaySpec{GatewayClassName: "fleet", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}))
	}
	var addr string
	deadline := time.Now().Add(90 * time.Second)
	for addr == "" {
		var gw gwv1.Gateway
		if err := clusters[0].Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gw"}, &gw); err == nil &&
			meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)) && len(gw.Status.Addresses) == 1 {
			addr = net.JoinHostPort(gw.Status.Addresses[0].Value, "80")
		}
		if time.Now().After(deadline) {
			b.Fatal("fleet gateway not programmed after 90s")
		}
		time.Sleep(50 * time.Millisecond)
	}

	acc := &accepted{at: map[string]time.Time{}, wait: map[string]chan struct{}{}}
	for _, c := range clusters {
		acc.watch(ctx, b, c)
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	ph := phase{clusters: clusters, acc: acc, hc: hc, addr: addr}
	ph.run(ctx, b, op, "", 0, routes)
	// Cold start: stop the operator (its proxies go with it), fill up to COLD_ROUTES, start again.
	must(b, op.Stop())
	var cwg sync.WaitGroup
	next := atomic.Int64{}
	next.Store(int64(routes))
	for range 8 {
		cwg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= cold {
					return
				}
				must(b, clusters[i%len(clusters)].Client.Create(ctx, route(i)))
			}
		})
	}
	cwg.Wait()
	coldStart := time.Now()
	op, err = testbed.StartOperator(binary, clusters[0], stateDir, args...)
	must(b, err)
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		if file := os.Getenv("COLD_PROFILE"); file != "" {
			profile(b, file, envInt("COLD_PROFILE_S", 20))
		}
	}()
	// Programmed = every route answers 200 through the new proxy.
	pending := make([]int, cold)
	for i := range pending {
		pending[i] = i
	}
	// A sweep of every pending route takes seconds at 50,000: every route was served between the
	// last failed probe and the end of the last sweep.
	lastFail := coldStart
	for len(pending) > 0 {
		var mu sync.Mutex
		var left []int
		var pw sync.WaitGroup
		chunk := (len(pending) + 15) / 16
		for k := 0; k < len(pending); k += chunk {
			part := pending[k:min(k+chunk, len(pending))]
			pw.Go(func() {
				for _, i := range part {
					if get(hc, addr, fmt.Sprintf("r%d.example.com", i)) != http.StatusOK {
						mu.Lock()
						left = append(left, i)
						lastFail = time.Now()
						mu.Unlock()
					}
				}
			})
		}
		pw.Wait()
		pending = left
		if time.Since(coldStart) > 120*time.Second {
			b.Fatalf("cold start: %d of %d routes not served after 120s", len(pending), cold)
		}
		if len(pending) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	coldTook := time.Since(coldStart)
	rss, _ := op.RSS()
	b.ReportMetric(coldTook.Seconds(), "cold-start-s")
	b.ReportMetric(lastFail.Sub(coldStart).Seconds(), "cold-last-miss-s")
	b.Logf("cold start with %d routes: all served %s after the operator started, the last miss at %s (RSS %.1f MiB)", cold, coldTook.Round(time.Millisecond),
		lastFail.Sub(coldStart).Round(time.Millisecond), float64(rss)/(1<<20))
	// Served is not all: every route's status says Accepted once the operator wrote them all.
	// Meanwhile DURING_ROUTES routes are added, one every 500 ms while that backlog lasts: how long
	// a change waits for its status behind the backlog.
	var added atomic.Int64
	drained := make(chan struct{})
	var toAccepted []time.Duration
	var dwg sync.WaitGroup
	dwg.Go(func() {
		for i := range envInt("DURING_ROUTES", 0) {
			select {
			case <-drained:
				return
			case <-time.After(500 * time.Millisecond):
			}
			r := route(10_000_000 + i) // past every other phase's names
			done := acc.expect(clusters[0].Name + "/" + r.Name)
			added.Add(1)
			t0 := time.Now()
			if err := clusters[0].Client.Create(ctx, r); err != nil {
				b.Errorf("adding route %s during the backlog: %v", r.Name, err) // not Fatal: not the benchmark's goroutine
				added.Add(-1)
				return
			}
			select {
			case <-done:
				toAccepted = append(toAccepted, time.Since(t0))
			case <-time.After(60 * time.Second):
				b.Errorf("route %s added during the backlog not Accepted after 60s", r.Name)
			}
		}
	})
	for acc.count() < max(cold, routes)+int(added.Load()) && time.Since(coldStart) < 15*time.Minute {
		time.Sleep(50 * time.Millisecond)
	}
	acceptedTook := time.Since(coldStart)
	close(drained)
	dwg.Wait()
	if len(toAccepted) > 0 {
		b.ReportMetric(float64(pct(toAccepted, 0.5).Microseconds())/1000, "during-accepted-p50-ms")
		b.ReportMetric(float64(pct(toAccepted, 0.99).Microseconds())/1000, "during-accepted-p99-ms")
		b.Logf("%d routes added during the status backlog: apply→Accepted p50 %s p99 %s", len(toAccepted), pct(toAccepted, 0.5), pct(toAccepted, 0.99))
	}
	b.ReportMetric(acceptedTook.Seconds(), "cold-accepted-s")
	b.Logf("cold start with %d routes: %d seen Accepted %s after the operator started", cold, acc.count(), acceptedTook.Round(time.Millisecond))
	<-profiled
	if then := envInt("THEN_ROUTES", 0); then > 0 {
		if file := os.Getenv("THEN_HEAP"); file != "" {
			// The base of what the additions allocate: pprof -sample_index=alloc_space -base FILE.before FILE.
			save(b, file+".before", "heap")
		}
		profiled := make(chan struct{})
		go func() {
			defer close(profiled)
			if file := os.Getenv("THEN_PROFILE"); file != "" {
				profile(b, file, envInt("THEN_PROFILE_S", 30))
			}
		}()
		ph.run(ctx, b, op, "then-", max(cold, routes), max(cold, routes)+then)
		<-profiled
		if file := os.Getenv("THEN_HEAP"); file != "" {
			save(b, file, "heap")
		}
	}
	if envInt("RESTART", 0) > 0 {
		// Restarted over routes whose statuses are all written, as in an upgrade or a failover: the
		// writer should look at every route and write none.
		must(b, op.Stop())
		t0 := time.Now()
		op, err = testbed.StartOperator(binary, clusters[0], stateDir, args...)
		must(b, err)
		routes := acc.count()
		for {
			written, unchanged, err := routeWrites()
			must(b, err)
			if written+unchanged >= routes {
				b.ReportMetric(time.Since(t0).Seconds(), "restart-statuses-checked-s")
				b.ReportMetric(float64(written), "restart-status-writes")
				b.Logf("restart over %d routes with their statuses written: every status checked %s after the start, %d written", routes, time.Since(t0).Round(time.Millisecond), written)
				break
			}
			if time.Since(t0) > 5*time.Minute {
				b.Fatalf("restart: %d of %d route statuses checked after 5 min", written+unchanged, routes)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// trace appends, when TRACE_FILE is set, one added route's timeline (unix seconds): its create call's
// start and return, its first 200 and its Accepted, to be matched with the operator's and its
// proxy's debug logs (LOG_LEVEL=debug, STATE_DIR keeps them).
func trace(b *testing.B, name string, t0 time.Time, created time.Duration, served time.Time, acc *accepted, cluster string) {
	file := os.Getenv("TRACE_FILE")
	if file == "" {
		return
	}
	acc.mu.Lock()
	at := acc.at[cluster+"/"+name]
	acc.mu.Unlock()
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		_, err = fmt.Fprintf(f, "%s %.6f %.6f %.6f %.6f\n", name, unix(t0), unix(t0.Add(created)), unix(served), unix(at))
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		b.Errorf("TRACE_FILE: %v", err)
	}
}

func unix(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }

// routeWrites reads the operator's HTTPRoute status writes, written and found unchanged, from its
// metrics (FLEETGATE_METRICS); zero while they cannot be read yet.
func routeWrites() (written, unchanged int, err error) {
	addr := os.Getenv("FLEETGATE_METRICS")
	if addr == "" {
		return 0, 0, errors.New("RESTART needs FLEETGATE_METRICS")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0, nil // not listening yet
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(body)) {
		for result, n := range map[string]*int{"written": &written, "unchanged": &unchanged} {
			if v, ok := strings.CutPrefix(line, `fleetgate_status_writes_total{kind="HTTPRoute",result="`+result+`"} `); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return 0, 0, err
				}
				*n = int(f)
			}
		}
	}
	return written, unchanged, nil
}

// profile saves a CPU profile of the operator (FLEETGATE_PPROF) over the next seconds.
func profile(tb testing.TB, file string, seconds int) {
	save(tb, file, fmt.Sprintf("profile?seconds=%d", seconds))
}

// save saves one of the operator's profiles (FLEETGATE_PPROF), "heap" or "profile?seconds=n".
func save(tb testing.TB, file, which string) {
	addr := os.Getenv("FLEETGATE_PPROF")
	if addr == "" {
		tb.Errorf("profiles need FLEETGATE_PPROF")
		return
	}
	url := fmt.Sprintf("http://%s/debug/pprof/%s", addr, which)
	var resp *http.Response
	var err error
	// The operator opens its pprof listener a moment after it starts.
	for range 100 {
		if resp, err = http.Get(url); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		tb.Errorf("operator profile: %v", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err == nil {
		_, err = io.Copy(f, resp.Body)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		tb.Errorf("operator profile: %v", err)
	}
}

// phase adds routes one at a time to the fleet gateway at addr, spread over clusters, while
// earlier routes are probed continuously.
type phase struct {
	clusters []*testbed.Cluster
	acc      *accepted
	hc       *http.Client
	addr     string
}

// run adds routes from up to to (those below from exist and are served) and reports its
// measures, their names prefixed with prefix.
func (ph *phase) run(ctx context.Context, b *testing.B, op *testbed.Operator, prefix string, from, to int) {
	clusters, acc, hc, addr := ph.clusters, ph.acc, ph.hc, ph.addr
	var peak atomic.Int64
	sample := func() {
		if rss, err := op.RSS(); err == nil && rss > peak.Load() {
			peak.Store(rss)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Live probing: earlier routes keep being requested while new ones are added.
	var served atomic.Int64
	served.Store(int64(from))
	var probes, probeErrs atomic.Int64
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n := served.Load()
			if n == 0 {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			probes.Add(1)
			if get(hc, addr, fmt.Sprintf("r%d.example.com", i%int(n))) != http.StatusOK {
				probeErrs.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				sample()
			}
		}
	})

	// toCreated is the API server's share of apply→Accepted: the create call itself.
	var toAccepted, toServe, toCreated []time.Duration
	errs := 0
	start := time.Now()
	for i := from; i < to; i++ {
		c := clusters[i%len(clusters)]
		done := acc.expect(fmt.Sprintf("%s/r%d", c.Name, i))
		t0 := time.Now()
		must(b, c.Client.Create(ctx, route(i)))
		toCreated = append(toCreated, time.Since(t0))
		host := fmt.Sprintf("r%d.example.com", i)
		var servedAt time.Time
		for servedAt.IsZero() {
			if get(hc, addr, host) == http.StatusOK {
				servedAt = time.Now()
				break
			}
			if time.Since(t0) > 30*time.Second {
				errs++
				break
			}
			time.Sleep(time.Millisecond)
		}
		select {
		case <-done:
			acc.mu.Lock()
			toAccepted = append(toAccepted, acc.at[fmt.Sprintf("%s/r%d", c.Name, i)].Sub(t0))
			acc.mu.Unlock()
		case <-time.After(30 * time.Second):
			errs++
		}
		if !servedAt.IsZero() {
			trace(b, fmt.Sprintf("r%d", i), t0, toCreated[len(toCreated)-1], servedAt, acc, c.Name)
			toServe = append(toServe, servedAt.Sub(t0))
			served.Store(int64(i + 1))
		}
	}
	close(stop)
	wg.Wait()
	sample()
	b.ReportMetric(float64(pct(toAccepted, 0.5).Microseconds())/1000, prefix+"accepted-p50-ms")
	b.ReportMetric(float64(pct(toAccepted, 0.99).Microseconds())/1000, prefix+"accepted-p99-ms")
	b.ReportMetric(float64(pct(toServe, 0.5).Microseconds())/1000, prefix+"first200-p50-ms")
	b.ReportMetric(float64(pct(toServe, 0.99).Microseconds())/1000, prefix+"first200-p99-ms")
	b.ReportMetric(float64(errs), prefix+"errors")
	b.ReportMetric(float64(probeErrs.Load()), prefix+"probe-errors")
	b.ReportMetric(float64(peak.Load())/(1<<20), prefix+"peak-rss-MiB")
	b.Logf("%d routes one at a time (from %d) in %s over %d members: apply→Accepted p50 %s p99 %s; apply→first 200 p50 %s p99 %s; %d errors; live probes %d, %d failed; operator peak RSS %.1f MiB; the create call alone p50 %s p99 %s",
		to-from, from, time.Since(start).Round(time.Second), len(clusters), pct(toAccepted, 0.5), pct(toAccepted, 0.99), pct(toServe, 0.5), pct(toServe, 0.99),
		errs, probes.Load(), probeErrs.Load(), float64(peak.Load())/(1<<20), pct(toCreated, 0.5), pct(toCreated, 0.99))
}
