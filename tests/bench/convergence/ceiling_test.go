package convergence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// BenchmarkStatusCeiling measures how many HTTPRoute status writes per second this box's API
// server takes, without the operator: CEILING_ROUTES (3,000) routes, each written once per
// configuration by K concurrent writers (CEILING_WRITERS, "1 8 32 64 128"), with a full Update or
// a merge patch carrying the resourceVersion (the optimistic lock the writer needs), with and
// without one Event created per write, over one HTTP/2 connection or CEILING_CONNS (8). Each
// configuration reports writes/s and the CPU the API server, etcd and this client used, in cores.
// CEILING_PROFILE=file saves a CPU profile of the API server over the first configuration.
func BenchmarkStatusCeiling(b *testing.B) {
	n := envInt("CEILING_ROUTES", 3000)
	writers := envInts(b, "CEILING_WRITERS", []int{1, 8, 32, 64, 128})
	c := testbed.ForTest(b, "hub")[0]
	ctx := b.Context()
	procs, err := controlPlane(c.Config)
	must(b, err)
	clients := func(conns int) []client.Client {
		out := make([]client.Client, conns)
		for i := range out {
			cfg := rest.CopyConfig(c.Config)
			cfg.QPS = -1 // as the operator's hub client (controller-runtime's GetConfig)
			if conns > 1 {
				// A dial function of its own keeps client-go from sharing one cached transport.
				cfg.Dial = (&net.Dialer{}).DialContext
			}
			cl, err := client.New(cfg, client.Options{Scheme: c.Client.Scheme()})
			must(b, err)
			out[i] = cl
		}
		return out
	}
	routes := make([]*gwv1.HTTPRoute, n)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				r := route(i)
				if err := c.Client.Create(ctx, r); err != nil {
					b.Error(err) // not Fatal: not the benchmark's goroutine
					return
				}
				routes[i] = r
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	round := 0
	for _, conns := range []int{1, envInt("CEILING_CONNS", 8)} {
		cls := clients(conns)
		for _, patch := range []bool{false, true} {
			for _, events := range []bool{false, true} {
				for _, k := range writers {
					if conns > 1 && (k < 32 || events) {
						continue // more connections only matter where many requests are in flight
					}
					round++
					name := fmt.Sprintf("conns=%d/patch=%v/events=%v/writers=%d", conns, patch, events, k)
					b.Run(name, func(b *testing.B) {
						for range b.N {
							var profiled chan struct{}
							if file := os.Getenv("CEILING_PROFILE"); file != "" && round == 1 {
								profiled = make(chan struct{})
								go func() {
									defer close(profiled)
									if err := apiServerProfile(ctx, c.Config, file, envInt("CEILING_PROFILE_S", 5)); err != nil {
										b.Error(err)
									}
								}()
							}
							writeAll(ctx, b, cls, routes, k, round, patch, events, procs)
							if profiled != nil {
								<-profiled
							}
						}
					})
				}
			}
		}
	}
}

// writeAll writes every route's status once with k writers and reports the rates.
func writeAll(ctx context.Context, b *testing.B, cls []client.Client, routes []*gwv1.HTTPRoute, k, round int, patch, events bool, procs []int) {
	cpu0, self0 := procCPU(procs), selfCPU()
	start := time.Now()
	next := atomic.Int64{}
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := range k {
		cl := cls[w%len(cls)]
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(routes); i = int(next.Add(1) - 1) {
				r := routes[i]
				base := r.DeepCopy()
				r.Status.Parents = []gwv1.RouteParentStatus{{
					ParentRef:      gwv1.ParentReference{Name: "gw"},
					ControllerName: v1alpha1.ControllerName,
					Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
						Message: fmt.Sprintf("round %d", round), LastTransitionTime: metav1.Now(), ObservedGeneration: r.Generation}},
				}}
				var err error
				if patch {
					err = cl.Status().Patch(ctx, r, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
				} else {
					err = cl.Status().Update(ctx, r)
				}
				if err != nil {
					failed.Add(1)
					b.Errorf("writing %s: %v", r.Name, err)
					continue
				}
				if events {
					if err := cl.Create(ctx, &eventsv1.Event{
						ObjectMeta:          metav1.ObjectMeta{Namespace: r.Namespace, Name: fmt.Sprintf("%s.%x", r.Name, time.Now().UnixNano())},
						EventTime:           metav1.NowMicro(),
						ReportingController: v1alpha1.ControllerName,
						ReportingInstance:   "ceiling",
						Action:              "StatusChanged",
						Reason:              "Accepted",
						Regarding:           corev1.ObjectReference{Kind: "HTTPRoute", APIVersion: gwv1.GroupVersion.String(), Namespace: r.Namespace, Name: r.Name, UID: r.UID},
						Note:                "Accepted=True: Accepted",
						Type:                corev1.EventTypeNormal,
					}); err != nil {
						failed.Add(1)
						b.Errorf("creating an Event for %s: %v", r.Name, err)
					}
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start).Seconds()
	cpu1, self1 := procCPU(procs), selfCPU()
	b.ReportMetric(float64(len(routes))/took, "writes/s")
	b.ReportMetric((cpu1[0]-cpu0[0])/took, "apiserver-cores")
	b.ReportMetric((cpu1[1]-cpu0[1])/took, "etcd-cores")
	b.ReportMetric((self1-self0)/took, "client-cores")
	b.ReportMetric(float64(failed.Load()), "failed")
}

// apiServerProfile saves a CPU profile of the API server at cfg over the next seconds (its
// /debug/pprof, on by default for an admin).
func apiServerProfile(ctx context.Context, cfg *rest.Config, file string, seconds int) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	u := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(cfg.Host, "/"), seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("API server profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("API server profile from %s: %s", u, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

func envInts(tb testing.TB, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for f := range strings.FieldsSeq(v) {
		n, err := strconv.Atoi(f)
		must(tb, err)
		out = append(out, n)
	}
	return out
}

// controlPlane finds the kube-apiserver serving cfg (by its secure port) and its etcd (by the
// client URL the API server names).
func controlPlane(cfg *rest.Config) ([]int, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return nil, err
	}
	find := func(bin string, match func(arg string) bool) (int, []string) {
		for _, p := range cmdlines {
			raw, err := os.ReadFile(p)
			if err != nil || len(raw) == 0 {
				continue
			}
			args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
			if filepath.Base(args[0]) != bin {
				continue
			}
			for _, a := range args[1:] {
				if match(a) {
					var pid int
					_, _ = fmt.Sscanf(p, "/proc/%d/cmdline", &pid)
					return pid, args
				}
			}
		}
		return 0, nil
	}
	api, args := find("kube-apiserver", func(a string) bool { return a == "--secure-port="+u.Port() })
	var etcdURL string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
			etcdURL = v
		}
	}
	etcd, _ := find("etcd", func(a string) bool {
		return etcdURL != "" && strings.HasPrefix(a, "--listen-client-urls") && strings.Contains(a, etcdURL)
	})
	if api == 0 || etcd == 0 {
		return nil, fmt.Errorf("control plane of %s not found (kube-apiserver %d, etcd %d at %q)", cfg.Host, api, etcd, etcdURL)
	}
	return []int{api, etcd}, nil
}

// procCPU is the user+system CPU seconds each process used so far.
func procCPU(pids []int) []float64 {
	out := make([]float64, len(pids))
	for i, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces): state is the first, utime the 12th.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		out[i] = (ut + st) / 100 // USER_HZ
	}
	return out
}

func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
