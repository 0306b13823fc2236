package controllers

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Every operator replica translates and serves the proxies' configs; only the leader writes status
// and calls providers. A proxy may be connected to any replica (they dial the config server's
// Service), so the leader's Programmed needs what the other replicas' proxies acknowledged: each
// replica publishes its view in a Lease of its own (a delivery report), and the leader merges the
// live reports with its own config server's view.
//
// Config versions are numbered by each replica on its own, so a report carries no version: it
// says, per proxy, whether it serves the replica's first config of the Gateway objects' current
// generations (or a newer one), or the replica's latest config, and it names those generations,
// so that the leader counts a proxy only when that replica translated the same Gateway objects.

// ProxyState is what one proxy replica connected to this operator replica did with the configs
// sent to it, in this replica's version numbers.
type ProxyState struct {
	Node string
	// Acked is the newest version the proxy serves; Nacked and NackReason its latest refusal of a
	// newer one.
	Acked, Nacked uint64
	NackReason    string
	// Refused says why the proxy cannot be served at all (no common wire version).
	Refused string
}

// LabelDeliveryReport marks the Leases that carry the replicas' delivery reports.
const LabelDeliveryReport = "fleetgate.dev/delivery-report"

// annotationReport holds a Lease's report (JSON).
const annotationReport = "fleetgate.dev/delivery"

// ReplicaOptions make this operator one of several replicas.
type ReplicaOptions struct {
	// Name identifies this replica (its pod's name); Namespace holds the reports (the operator's).
	Name, Namespace string
	// Owner, when set, owns this replica's report (its Pod), so that it goes with the pod.
	Owner *metav1.OwnerReference
	// Period is how often a report is renewed when nothing changed; a report not renewed for
	// three periods is ignored. Zero means 5s.
	Period time.Duration
}

// reportLevel places a proxy's version relative to one replica's delivery of a gateway.
type reportLevel uint8

const (
	// levelNone: older than the replica's first config of the current generations.
	levelNone reportLevel = iota
	// levelSince: that config or newer, not the latest.
	levelSince
	// levelLatest: the replica's latest config.
	levelLatest
)

// reportedProxy is a proxy's standing against one replica's delivery of a gateway: what it serves
// and what it refused, as levels, or why it cannot be served at all.
type reportedProxy struct {
	Node    string      `json:"node"`
	Acked   reportLevel `json:"acked,omitempty"`
	Nacked  reportLevel `json:"nacked,omitempty"`
	Reason  string      `json:"reason,omitempty"`
	Refused string      `json:"refused,omitempty"`
	// behind says why what the proxy serves cannot be counted yet: the replica it is connected to
	// has not translated the Gateway's current generation. Never reported, only merged.
	behind string
}

// standing places a proxy connected to this replica against dl, this replica's delivery.
func standing(p ProxyState, dl delivery) reportedProxy {
	level := func(v uint64) reportLevel {
		switch {
		case v >= dl.version:
			return levelLatest
		case v >= dl.since && dl.since != 0:
			return levelSince
		}
		return levelNone
	}
	rp := reportedProxy{Node: p.Node, Refused: p.Refused}
	if p.Refused == "" {
		rp.Acked = level(p.Acked)
		if p.Nacked > p.Acked {
			rp.Nacked, rp.Reason = level(p.Nacked), p.NackReason
		}
	}
	return rp
}

type reportedGateway struct {
	Generations string          `json:"generations,omitempty"`
	Proxies     []reportedProxy `json:"proxies"`
}

// deliveryReport is one replica's view: the gateways it has proxies of.
type deliveryReport struct {
	Gateways map[string]reportedGateway `json:"gateways,omitempty"`
}

// setupReplicas has this replica publish its delivery report and merge the others' into
// Programmed; changed is told when they change what the leader merges.
func (d *Dataplane) setupReplicas(ctx context.Context, mgr ctrl.Manager, reg prometheus.Registerer, o ReplicaOptions, changed func(), log logr.Logger) error {
	if o.Period == 0 {
		o.Period = 5 * time.Second
	}
	d.peers = newPeerReports(o.Name, 3*o.Period)
	d.reports = &reportWriter{client: mgr.GetClient(), live: mgr.GetAPIReader(), o: o, report: d.report, peers: d.peers,
		expired: changed, leads: leads(mgr), wake: make(chan struct{}, 1), log: log,
		size: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_delivery_report_bytes",
			Help: "Size of this replica's delivery report (what its proxies acknowledged), as last computed."})}
	peers := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetgate_delivery_reports_merged",
		Help: "Other operator replicas' live delivery reports that this replica merges into Programmed."},
		func() float64 { return float64(d.peers.live()) })
	for _, c := range []prometheus.Collector{d.reports.size, peers} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering the delivery report metrics: %w", err)
		}
	}
	if err := mgr.Add(d.reports); err != nil {
		return fmt.Errorf("adding the delivery report writer: %w", err)
	}
	informer, err := mgr.GetCache().GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return fmt.Errorf("getting the Lease informer: %w", err)
	}
	return watchReports(informer, d.peers, changed)
}

// report is this replica's delivery view, for the other replicas.
func (d *Dataplane) report() deliveryReport {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := deliveryReport{Gateways: map[string]reportedGateway{}}
	for gw, dl := range d.delivery {
		if dl.final != nil || dl.version == 0 {
			continue
		}
		proxies := d.Configs.Proxies(gw)
		if len(proxies) == 0 {
			continue
		}
		rg := reportedGateway{Generations: dl.generations, Proxies: make([]reportedProxy, 0, len(proxies))}
		for _, p := range proxies {
			rg.Proxies = append(rg.Proxies, standing(p, dl))
		}
		out.Gateways[gw] = rg
	}
	return out
}

// peerReports are the other replicas' live delivery reports, as the Lease informer last saw them.
type peerReports struct {
	self string
	ttl  time.Duration
	now  func() time.Time

	mu      sync.Mutex
	reports map[string]peerReport
}

type peerReport struct {
	report  deliveryReport
	renewed time.Time
}

func newPeerReports(self string, ttl time.Duration) *peerReports {
	return &peerReports{self: self, ttl: ttl, now: time.Now, reports: map[string]peerReport{}}
}

// set records the report of a Lease, or forgets it when the Lease is gone (nil), expired (a
// replica killed before it could delete it) or unreadable.
// It tells whether what the leader merges changed.
func (p *peerReports) set(name string, lease *coordinationv1.Lease) bool {
	if name == p.self {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var r deliveryReport
	if lease == nil || lease.Spec.RenewTime == nil || p.now().Sub(lease.Spec.RenewTime.Time) > p.ttl ||
		json.Unmarshal([]byte(lease.Annotations[annotationReport]), &r) != nil {
		_, had := p.reports[name]
		delete(p.reports, name)
		return had
	}
	p.reports[name] = peerReport{report: r, renewed: lease.Spec.RenewTime.Time}
	return true
}

// expire forgets the reports not renewed within the TTL: their replicas are gone or cut off, and
// their proxies reconnect elsewhere. It tells whether it forgot any.
func (p *peerReports) expire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now, forgot := p.now(), false
	for name, r := range p.reports {
		if now.Sub(r.renewed) > p.ttl {
			delete(p.reports, name)
			forgot = true
		}
	}
	return forgot
}

// live counts the reports being merged.
func (p *peerReports) live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reports)
}

// proxies are the gateway's proxies connected to other replicas, as they stand against their
// replica's delivery; a proxy of a replica that translated other Gateway generations than dl's
// serves nothing of dl's. Nodes in skip (connected here) are left out, and a node in several
// reports (it moved) counts once, from the freshest report.
func (p *peerReports) proxies(gateway string, dl delivery, skip map[string]bool) []reportedProxy {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	names := slices.SortedFunc(maps.Keys(p.reports), func(a, b string) int {
		return cmp.Or(p.reports[b].renewed.Compare(p.reports[a].renewed), cmp.Compare(a, b))
	})
	var out []reportedProxy
	seen := map[string]bool{}
	for _, name := range names {
		rg, ok := p.reports[name].report.Gateways[gateway]
		if !ok {
			continue
		}
		for _, rp := range rg.Proxies {
			if skip[rp.Node] || seen[rp.Node] {
				continue
			}
			seen[rp.Node] = true
			if rg.Generations != dl.generations {
				rp = reportedProxy{Node: rp.Node, Refused: rp.Refused,
					behind: "operator replica " + name + " has not translated the Gateway's current generation yet"}
			}
			out = append(out, rp)
		}
	}
	return out
}

// reportWriter publishes this replica's delivery report in its Lease whenever it changes, and
// renews it every period. It runs on every replica.
type reportWriter struct {
	client client.Client
	live   client.Reader
	o      ReplicaOptions
	report func() deliveryReport
	// peers are expired on the same clock; expired calls for a merge without them.
	peers   *peerReports
	expired func()
	// leads tells whether this replica sweeps stale reports; nil means it does.
	leads func() bool
	wake  chan struct{}
	log   logr.Logger
	size  prometheus.Gauge
}

// maxReportBytes keeps a report within what a Lease's annotations may hold (256 KiB in all): about
// 4,000 proxy streams on one replica.
const maxReportBytes = 240 << 10

// NeedLeaderElection: every replica serves proxies, so every replica reports.
func (w *reportWriter) NeedLeaderElection() bool { return false }

// poke asks for a report now; it never blocks, and does nothing on a nil writer.
func (w *reportWriter) poke() {
	if w == nil {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// reportMinInterval bounds the writes of one replica while ACKs stream in.
const reportMinInterval = 100 * time.Millisecond

func (w *reportWriter) Start(ctx context.Context) error {
	t := time.NewTicker(w.o.Period)
	defer t.Stop()
	var (
		lease   *coordinationv1.Lease
		written string
		at      time.Time
	)
	for {
		b, err := json.Marshal(w.report())
		if err != nil {
			return fmt.Errorf("encoding the delivery report: %w", err)
		}
		w.size.Set(float64(len(b)))
		switch {
		case len(b) > maxReportBytes:
			// Not renewed, the last report expires and the leader stops counting this replica's
			// proxies: their gateways wait rather than being called programmed on stale ACKs.
			if string(b) != written {
				w.log.Error(nil, "the delivery report is too large for a Lease; the leader will not count this replica's proxies",
					"bytes", len(b), "limit", maxReportBytes)
				written = string(b)
			}
		case string(b) != written || time.Since(at) >= w.o.Period:
			if lease, err = w.write(ctx, lease, string(b)); err != nil {
				w.log.Error(err, "publishing the delivery report; retrying")
				lease = nil // read it again
			} else {
				written, at = string(b), time.Now()
			}
		}
		select {
		case <-ctx.Done():
			w.remove()
			return nil
		case <-time.After(reportMinInterval):
		}
		select {
		case <-ctx.Done():
			w.remove()
			return nil
		case <-w.wake:
		case <-t.C:
			if w.peers.expire() {
				w.expired()
			}
			w.sweep(ctx)
		}
	}
}

// staleReportAge is how long a report goes unrenewed before the leader deletes its Lease: those of
// pods go with their pods (owner references), but a replica outside a pod that was killed leaves
// its Lease behind.
const staleReportAge = time.Hour

// sweep deletes, on the leader, the report Leases not renewed for staleReportAge.
func (w *reportWriter) sweep(ctx context.Context) {
	if w.leads != nil && !w.leads() {
		return
	}
	var leases coordinationv1.LeaseList
	if err := w.client.List(ctx, &leases, client.InNamespace(w.o.Namespace), client.MatchingLabels{LabelDeliveryReport: "true"}); err != nil {
		w.log.Error(err, "listing the delivery reports")
		return
	}
	for i := range leases.Items {
		l := &leases.Items[i]
		if l.Spec.RenewTime != nil && time.Since(l.Spec.RenewTime.Time) < staleReportAge {
			continue
		}
		if err := w.client.Delete(ctx, l, client.Preconditions{ResourceVersion: &l.ResourceVersion}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			w.log.Error(err, "deleting a stale delivery report", "lease", l.Name)
			continue
		}
		w.log.Info("deleted a stale delivery report", "lease", l.Name, "holder", ptr.Deref(l.Spec.HolderIdentity, ""))
	}
}

// write creates or renews the Lease with report; lease is the last one written, nil to read it.
func (w *reportWriter) write(ctx context.Context, lease *coordinationv1.Lease, report string) (*coordinationv1.Lease, error) {
	now := metav1.NewMicroTime(time.Now())
	if lease == nil {
		lease = &coordinationv1.Lease{}
		err := w.live.Get(ctx, client.ObjectKey{Namespace: w.o.Namespace, Name: w.leaseName()}, lease)
		switch {
		case apierrors.IsNotFound(err):
			lease = w.newLease()
			lease.Annotations[annotationReport] = report
			lease.Spec.RenewTime = &now
			if err := w.client.Create(ctx, lease); err != nil {
				return nil, fmt.Errorf("creating Lease %s/%s: %w", lease.Namespace, lease.Name, err)
			}
			return lease, nil
		case err != nil:
			return nil, fmt.Errorf("reading Lease %s/%s: %w", w.o.Namespace, w.leaseName(), err)
		}
	}
	lease = lease.DeepCopy()
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[annotationReport] = report
	lease.Spec.RenewTime = &now
	lease.Spec.HolderIdentity = ptr.To(w.o.Name)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32((3 * w.o.Period).Seconds()))
	if err := w.client.Update(ctx, lease); err != nil {
		return nil, fmt.Errorf("renewing Lease %s/%s: %w", lease.Namespace, lease.Name, err)
	}
	return lease, nil
}

func (w *reportWriter) newLease() *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.o.Namespace, Name: w.leaseName(),
			Labels:      map[string]string{LabelDeliveryReport: "true"},
			Annotations: map[string]string{}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(w.o.Name), LeaseDurationSeconds: ptr.To(int32((3 * w.o.Period).Seconds()))},
	}
	if w.o.Owner != nil {
		l.OwnerReferences = []metav1.OwnerReference{*w.o.Owner}
	}
	return l
}

func (w *reportWriter) leaseName() string { return "fleetgate-delivery-" + w.o.Name }

// remove deletes this replica's report on shutdown, so that the leader stops counting its proxies
// at once rather than after the TTL (they are reconnecting elsewhere). It deletes by name: a write
// cut short by the shutdown may still have created or renewed the Lease.
func (w *reportWriter) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: w.o.Namespace, Name: w.leaseName()}}
	if err := w.client.Delete(ctx, lease); err != nil && !apierrors.IsNotFound(err) {
		w.log.Error(err, "deleting the delivery report")
	}
}

// eventSource is the part of an informer that watchReports uses.
type eventSource interface {
	AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// watchReports keeps peers up to date from the Lease informer and calls changed when what the
// leader merges changed.
func watchReports(informer eventSource, peers *peerReports, changed func()) error {
	handle := func(obj any, gone bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj, gone = d.Obj, true
		}
		l, ok := obj.(*coordinationv1.Lease)
		if !ok || l.Labels[LabelDeliveryReport] == "" {
			return
		}
		name := ptr.Deref(l.Spec.HolderIdentity, "")
		if gone {
			l = nil
		}
		if peers.set(name, l) {
			changed()
		}
	}
	_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { handle(obj, false) },
		UpdateFunc: func(_, obj any) { handle(obj, false) },
		DeleteFunc: func(obj any) { handle(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("watching the replicas' delivery reports: %w", err)
	}
	return nil
}
