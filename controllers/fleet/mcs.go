package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

// LabelManagedBy marks the ServiceImports fleetgate's MCS controller maintains; it deletes only those.
const LabelManagedBy = "fleetgate.dev/managed-by"

const managedByMCS = "mcs"

// mcsKey is the one work key of the MCS controller: every ServiceImport depends on the exports of
// every member, and a pass is cheap.
var mcsKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "mcs"}}

// MCS maintains a ServiceImport in every member for each Service exported (ServiceExport) by any
// member, as the MCS API KEP describes: ports and type come from the exported Services, the oldest
// export wins a conflict, and each ServiceExport gets Valid and Conflict conditions.
type MCS struct {
	Fleet *Fleet
}

// ServiceImports are created and merge-patched, their and the exports' status merge-patched.
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=serviceimports,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=serviceexports/status;serviceimports/status,verbs=patch

// SetupWithManager runs the controller on the fleet's member events, the hub's among them when it
// is a member (WatchHub): those reach it whether or not the hub serves the MCS CRDs.
func (c *MCS) SetupWithManager(mgr ctrl.Manager, skipNameValidation bool) error {
	toKey := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{mcsKey}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("mcs").
		WithOptions(controller.Options{SkipNameValidation: &skipNameValidation}).
		WatchesRawSource(source.Channel(c.Fleet.mcs, toKey)).
		Complete(c)
}

// export is one ServiceExport that names an existing Service.
type export struct {
	cluster string
	obj     *mcsv1a1.ServiceExport
	svc     *corev1.Service
	writer  client.Client
	conds   []metav1.Condition
}

// Reconcile derives every ServiceImport from the usable members' exports and writes them and the
// export conditions.
func (c *MCS) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	// A leaving member exports nothing any more, and its ServiceImports go (releaseImports).
	var members []Member
	var errs []error
	for _, m := range c.Fleet.Members() {
		if m.Leaving {
			errs = append(errs, releaseImports(ctx, m))
			continue
		}
		members = append(members, m)
	}
	byService := map[types.NamespacedName][]*export{}
	var all []*export
	for _, m := range members {
		exps, err := readExports(ctx, m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range exps {
			all = append(all, e)
			if e.svc != nil {
				k := types.NamespacedName{Namespace: e.obj.Namespace, Name: e.obj.Name}
				byService[k] = append(byService[k], e)
			}
		}
	}
	desired := map[types.NamespacedName]mcsv1a1.ServiceImportSpec{}
	clusters := map[types.NamespacedName][]string{}
	for k, exps := range byService {
		desired[k], clusters[k] = mergeExports(exps)
	}
	for _, e := range all {
		errs = append(errs, writeExportStatus(ctx, e))
	}
	// While a member is unreachable its exports are unknown: keep ServiceImports rather than
	// delete one that it may still back.
	prune := c.Fleet.allUsable()
	for _, m := range members {
		errs = append(errs, syncImports(ctx, m, desired, clusters, prune))
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	log.FromContext(ctx).V(1).Info("service imports synced", "services", len(desired), "members", len(members))
	return reconcile.Result{}, nil
}

func readExports(ctx context.Context, m Member) ([]*export, error) {
	var list mcsv1a1.ServiceExportList
	if err := m.Reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing ServiceExports in %s: %w", m.Name, err)
	}
	out := make([]*export, 0, len(list.Items))
	for i := range list.Items {
		se := &list.Items[i]
		e := &export{cluster: m.Name, obj: se, writer: m.Writer}
		var svc corev1.Service
		err := m.Reader.Get(ctx, client.ObjectKeyFromObject(se), &svc)
		switch {
		case apierrors.IsNotFound(err):
			e.valid(false, mcsv1a1.ServiceExportReasonNoService, fmt.Sprintf("Service %s/%s not found", se.Namespace, se.Name))
		case err != nil:
			return nil, fmt.Errorf("reading Service %s/%s in %s: %w", se.Namespace, se.Name, m.Name, err)
		case svc.Spec.Type == corev1.ServiceTypeExternalName:
			e.valid(false, mcsv1a1.ServiceExportReasonInvalidServiceType, "Services of type ExternalName cannot be exported")
		default:
			e.svc = &svc
			e.valid(true, mcsv1a1.ServiceExportReasonValid, "Service is exported")
		}
		out = append(out, e)
	}
	return out, nil
}

func (e *export) valid(ok bool, reason mcsv1a1.ServiceExportConditionReason, msg string) {
	e.set(mcsv1a1.ServiceExportConditionValid, ok, reason, msg)
}

func (e *export) set(t mcsv1a1.ServiceExportConditionType, ok bool, reason mcsv1a1.ServiceExportConditionReason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&e.conds, metav1.Condition{Type: string(t), Status: status, Reason: string(reason), Message: msg, ObservedGeneration: e.obj.Generation})
}

func importType(svc *corev1.Service) mcsv1a1.ServiceImportType {
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return mcsv1a1.Headless
	}
	return mcsv1a1.ClusterSetIP
}

// mergeExports computes a ServiceImport spec from the exports of one service, oldest first: the
// oldest sets the type; ports are the union by name, and an export whose type or port of the same
// name differs from what older ones set is Conflicted (and its differing part left out).
func mergeExports(exps []*export) (mcsv1a1.ServiceImportSpec, []string) {
	slices.SortFunc(exps, func(a, b *export) int {
		return cmp.Or(a.obj.CreationTimestamp.Compare(b.obj.CreationTimestamp.Time), cmp.Compare(a.cluster, b.cluster))
	})
	spec := mcsv1a1.ServiceImportSpec{Type: importType(exps[0].svc)}
	ports := map[string]mcsv1a1.ServicePort{}
	var clusters []string
	for _, e := range exps {
		clusters = append(clusters, e.cluster)
		if t := importType(e.svc); t != spec.Type {
			e.set(mcsv1a1.ServiceExportConditionConflict, true, mcsv1a1.ServiceExportReasonTypeConflict,
				fmt.Sprintf("type %s conflicts with %s of the oldest export (cluster %s)", t, spec.Type, exps[0].cluster))
			continue
		}
		var conflicts []string
		for _, p := range e.svc.Spec.Ports {
			ip := mcsv1a1.ServicePort{Name: p.Name, Protocol: cmp.Or(p.Protocol, corev1.ProtocolTCP), AppProtocol: p.AppProtocol, Port: p.Port}
			if old, ok := ports[p.Name]; ok {
				if !equality.Semantic.DeepEqual(old, ip) {
					conflicts = append(conflicts, fmt.Sprintf("port %q", p.Name))
				}
				continue
			}
			ports[p.Name] = ip
		}
		if len(conflicts) > 0 {
			e.set(mcsv1a1.ServiceExportConditionConflict, true, mcsv1a1.ServiceExportReasonPortConflict,
				fmt.Sprintf("%v defined differently by an older export (oldest: cluster %s)", conflicts, exps[0].cluster))
			continue
		}
		e.set(mcsv1a1.ServiceExportConditionConflict, false, mcsv1a1.ServiceExportReasonNoConflicts, "no conflicts with other exports")
	}
	for _, p := range ports {
		spec.Ports = append(spec.Ports, p)
	}
	slices.SortFunc(spec.Ports, func(a, b mcsv1a1.ServicePort) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Name, b.Name))
	})
	slices.Sort(clusters)
	return spec, slices.Compact(clusters)
}

func writeExportStatus(ctx context.Context, e *export) error {
	before := e.obj.DeepCopy()
	for _, c := range e.conds {
		meta.SetStatusCondition(&e.obj.Status.Conditions, c)
	}
	if equality.Semantic.DeepEqual(before.Status, e.obj.Status) {
		return nil
	}
	if err := e.writer.Status().Patch(ctx, e.obj, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing ServiceExport %s/%s status in %s: %w", e.obj.Namespace, e.obj.Name, e.cluster, err)
	}
	return nil
}

// syncImports creates and updates the desired ServiceImports in one member (in namespaces it has)
// and, when prune is set, deletes the ones fleetgate made that are no longer exported.
func syncImports(ctx context.Context, m Member, desired map[types.NamespacedName]mcsv1a1.ServiceImportSpec, clusters map[types.NamespacedName][]string, prune bool) error {
	var list mcsv1a1.ServiceImportList
	if err := m.Reader.List(ctx, &list); err != nil {
		return fmt.Errorf("listing ServiceImports in %s: %w", m.Name, err)
	}
	have := map[types.NamespacedName]*mcsv1a1.ServiceImport{}
	for i := range list.Items {
		have[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
	}
	var errs []error
	for k, spec := range desired {
		cur := have[k]
		if cur == nil {
			var ns corev1.Namespace
			if err := m.Reader.Get(ctx, client.ObjectKey{Name: k.Namespace}, &ns); err != nil {
				continue // namespace sameness: no namespace, no import
			}
			cur = &mcsv1a1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name,
				Labels: map[string]string{LabelManagedBy: managedByMCS}}, Spec: spec}
			if err := m.Writer.Create(ctx, cur); meta.IsNoMatchError(err) {
				return nil // the member lacks the MCS CRDs, as its PrerequisitesInstalled condition says
			} else if err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("creating ServiceImport %s in %s: %w", k, m.Name, err))
				continue
			}
		} else if cur.Labels[LabelManagedBy] != managedByMCS {
			continue // someone else's import
		} else if !equality.Semantic.DeepEqual(cur.Spec.Ports, spec.Ports) || cur.Spec.Type != spec.Type {
			before := cur.DeepCopy()
			cur.Spec.Ports, cur.Spec.Type = spec.Ports, spec.Type
			if err := m.Writer.Patch(ctx, cur, client.MergeFrom(before)); err != nil {
				errs = append(errs, fmt.Errorf("updating ServiceImport %s in %s: %w", k, m.Name, err))
				continue
			}
		}
		errs = append(errs, writeImportStatus(ctx, m, cur, clusters[k]))
	}
	if prune {
		for k, cur := range have {
			if _, ok := desired[k]; ok || cur.Labels[LabelManagedBy] != managedByMCS {
				continue
			}
			if err := m.Writer.Delete(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting ServiceImport %s in %s: %w", k, m.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// managedImports lists the ServiceImports fleetgate made in a member; none when the member does
// not serve the MCS CRDs.
func managedImports(ctx context.Context, m Member) ([]mcsv1a1.ServiceImport, error) {
	var list mcsv1a1.ServiceImportList
	err := m.Reader.List(ctx, &list, client.MatchingLabels{LabelManagedBy: managedByMCS})
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing ServiceImports in %s: %w", m.Name, err)
	}
	return list.Items, nil
}

// releaseImports deletes the ServiceImports fleetgate made in a leaving member: the member takes
// no part in the fleet's services any more, and its MemberCluster waits for them to go
// (importsLeft).
func releaseImports(ctx context.Context, m Member) error {
	imports, err := managedImports(ctx, m)
	if err != nil {
		return err
	}
	var errs []error
	for i := range imports {
		if err := m.Writer.Delete(ctx, &imports[i]); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting ServiceImport %s/%s in leaving member %s: %w", imports[i].Namespace, imports[i].Name, m.Name, err))
		}
	}
	return errors.Join(errs...)
}

// importsLeft names the ServiceImports fleetgate made that are still in a leaving member, and
// has the MCS controller look again while there are some.
func (f *Fleet) importsLeft(ctx context.Context, name string) ([]string, error) {
	f.mu.RLock()
	m, ok := f.members[name]
	var mem Member
	if ok {
		mem = f.memberLocked(m)
	}
	f.mu.RUnlock()
	if !ok {
		return nil, nil
	}
	imports, err := managedImports(ctx, mem)
	if err != nil || len(imports) == 0 {
		return nil, err
	}
	out := make([]string, 0, len(imports))
	for _, si := range imports {
		out = append(out, "ServiceImport "+si.Namespace+"/"+si.Name)
	}
	f.pokeMCS()
	return out, nil
}

// writeImportStatus lists the exporting clusters on the ServiceImport.
func writeImportStatus(ctx context.Context, m Member, si *mcsv1a1.ServiceImport, clusters []string) error {
	want := make([]mcsv1a1.ClusterStatus, 0, len(clusters))
	for _, c := range clusters {
		want = append(want, mcsv1a1.ClusterStatus{Cluster: c})
	}
	if equality.Semantic.DeepEqual(si.Status.Clusters, want) {
		return nil
	}
	before := si.DeepCopy()
	si.Status.Clusters = want
	if err := m.Writer.Status().Patch(ctx, si, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing ServiceImport %s/%s status in %s: %w", si.Namespace, si.Name, m.Name, err)
	}
	return nil
}
