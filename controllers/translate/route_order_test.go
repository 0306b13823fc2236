package translate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestRouteStatusesInRefOrder: the statuses of routes of several kinds in several clusters come
// in ObjectRef order (cluster, kind, namespace, name), each kind's list being in snapshot order,
// and routes without a parent of ours have none.
func TestRouteStatusesInRefOrder(t *testing.T) {
	mk := func(kind, cluster, name string, parents bool) *route {
		r := &route{kind: kind, cluster: cluster, namespace: "ns", nsName: "ns/" + name}
		if parents {
			r.parents = []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "gw"}}}
		}
		return r
	}
	tests := []struct {
		name   string
		byKind [][]*route
		want   []string
	}{
		{name: "none", byKind: [][]*route{nil, nil, nil, nil, nil}},
		{
			name: "kinds and clusters interleaved",
			byKind: [][]*route{
				{mk(kindHTTPRoute, "a", "h1", true), mk(kindHTTPRoute, "c", "h2", true), mk(kindHTTPRoute, "c", "h3", false), mk(kindHTTPRoute, "c", "h4", true)},
				{mk(kindGRPCRoute, "b", "g1", true), mk(kindGRPCRoute, "c", "g2", true)},
				nil,
				{mk(kindTCPRoute, "a", "t1", true), mk(kindTCPRoute, "d", "t2", true)},
				{mk(kindUDPRoute, "b", "u1", false)},
			},
			want: []string{
				"a HTTPRoute ns/h1", "a TCPRoute ns/t1",
				"b GRPCRoute ns/g1",
				"c GRPCRoute ns/g2", "c HTTPRoute ns/h2", "c HTTPRoute ns/h4",
				"d TCPRoute ns/t2",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &translator{res: &Result{}}
			tr.routeStatuses(tt.byKind)
			var got []string
			for _, rs := range tr.res.Routes {
				got = append(got, rs.Ref.Cluster+" "+rs.Ref.Kind+" "+rs.Ref.Namespace+"/"+rs.Ref.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("route statuses (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFromLastOrder: ranked routes in rank order, then the unranked and those whose rank another
// holds, in their order; the scratch space comes back all nil, grown to what ranks needed.
func TestFromLastOrder(t *testing.T) {
	mk := func(name string, rank int) *route { return &route{nsName: name, rank: rank} }
	tests := []struct {
		name       string
		ranks      []int
		want       []string
		wantRanked int
	}{
		{name: "empty"},
		{name: "none ranked", ranks: []int{0, 0}, want: []string{"0", "1"}},
		{name: "reversed, gaps", ranks: []int{9, 4, 0, 7}, want: []string{"1", "3", "0", "2"}, wantRanked: 3},
		{name: "rank held twice", ranks: []int{2, 1, 2, 0}, want: []string{"1", "0", "2", "3"}, wantRanked: 2},
		{name: "past the scratch space", ranks: []int{40, 3}, want: []string{"1", "0"}, wantRanked: 2},
	}
	slots := make([]*route, 8)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rs []*route
			for i, k := range tt.ranks {
				rs = append(rs, mk(string(rune('0'+i)), k))
			}
			var ranked int
			ranked, slots = fromLastOrder(rs, slots)
			var got []string
			for _, r := range rs {
				got = append(got, r.nsName)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || ranked != tt.wantRanked {
				t.Errorf("order (-want +got):\n%s\nranked %d, want %d", diff, ranked, tt.wantRanked)
			}
			for k, r := range slots {
				if r != nil {
					t.Fatalf("slot %d still holds %s", k, r.nsName)
				}
			}
		})
	}
}
