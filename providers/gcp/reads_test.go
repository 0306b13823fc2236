package gcp

import (
	"net/http"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestAddressReads: Ensure reads the address its forwarding rules share once, and the gateway's
// own address not at all when it did not change it (it was listed), so that a steady gateway costs
// its lists and its NEGs' endpoints; a reserved address, which is not listed, is read.
func TestAddressReads(t *testing.T) {
	for _, tt := range []struct {
		golden         string
		create, steady int // GETs of an address
	}{
		{golden: "global-https", create: 1, steady: 0},           // two forwarding rules on the gateway's address
		{golden: "regional-named-address", create: 1, steady: 1}, // one on a reserved address
	} {
		t.Run(tt.golden, func(t *testing.T) {
			lb, members := goldenModel(t, tt.golden)
			p, fake := testProvider(t, members)
			if len(lb.Addresses) > 0 {
				o := mustDecode(t, lb.Parameters)
				insertAddress(t, fake, o.Project, o.Region, lb.Addresses[0].Value)
			}
			addressGets := func() int {
				n := 0
				for _, c := range fake.Calls() {
					if _, name, ok := strings.Cut(c.Path, "/addresses/"); ok && c.Method == http.MethodGet && name != "" {
						n++
					}
				}
				return n
			}
			var got []int
			for range 2 {
				fake.ResetCalls()
				ensure(t, p, lb)
				got = append(got, addressGets())
			}
			if diff := gocmp.Diff([]int{tt.create, tt.steady}, got); diff != "" {
				t.Errorf("GETs of an address in the first and a steady Ensure (-want +got):\n%s", diff)
			}
		})
	}
}
