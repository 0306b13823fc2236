package fleet

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

func TestMergeExports(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	exp := func(cluster string, age int, clusterIP string, ports ...corev1.ServicePort) *export {
		return &export{
			cluster: cluster,
			obj:     &mcsv1a1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 1, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Minute))}},
			svc:     &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports}},
		}
	}
	http := corev1.ServicePort{Name: "http", Port: 80}
	http8080 := corev1.ServicePort{Name: "http", Port: 8080}
	grpc := corev1.ServicePort{Name: "grpc", Port: 9090}
	tests := []struct {
		name      string
		exports   []*export
		wantSpec  mcsv1a1.ServiceImportSpec
		wantConfl map[string]string // cluster → Conflict reason when True
	}{
		{
			name:     "ports are the union",
			exports:  []*export{exp("a", 1, "10.0.0.1", http), exp("b", 2, "10.0.0.2", http, grpc)},
			wantSpec: mcsv1a1.ServiceImportSpec{Type: mcsv1a1.ClusterSetIP, Ports: []mcsv1a1.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}, {Name: "grpc", Protocol: "TCP", Port: 9090}}},
		},
		{
			name:      "the oldest export wins a port conflict",
			exports:   []*export{exp("b", 2, "10.0.0.2", http8080), exp("a", 1, "10.0.0.1", http)},
			wantSpec:  mcsv1a1.ServiceImportSpec{Type: mcsv1a1.ClusterSetIP, Ports: []mcsv1a1.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
			wantConfl: map[string]string{"b": string(mcsv1a1.ServiceExportReasonPortConflict)},
		},
		{
			name:      "a type conflict leaves the export out",
			exports:   []*export{exp("a", 1, corev1.ClusterIPNone, http), exp("b", 2, "10.0.0.2", grpc)},
			wantSpec:  mcsv1a1.ServiceImportSpec{Type: mcsv1a1.Headless, Ports: []mcsv1a1.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
			wantConfl: map[string]string{"b": string(mcsv1a1.ServiceExportReasonTypeConflict)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, clusters := mergeExports(tt.exports)
			if diff := cmp.Diff(tt.wantSpec, spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"a", "b"}, clusters); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
			got := map[string]string{}
			for _, e := range tt.exports {
				for _, c := range e.conds {
					if c.Type == string(mcsv1a1.ServiceExportConditionConflict) && c.Status == metav1.ConditionTrue {
						got[e.cluster] = c.Reason
					}
				}
			}
			if diff := cmp.Diff(tt.wantConfl, got, cmpEmptyMap); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
		})
	}
}

var cmpEmptyMap = cmp.Transformer("nilmap", func(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
})
