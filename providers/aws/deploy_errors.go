package aws

import (
	"fmt"
	"slices"
	"strings"
)

// ReplacementRefusedError: the Stack needs the load balancer replaced (type, scheme or IP address
// type changed) but deletion protection is on. fleetgate never turns protection off.
type ReplacementRefusedError struct {
	LoadBalancer string
	Changes      []string // e.g. "scheme internet-facing→internal"
}

func (e *ReplacementRefusedError) Error() string {
	return fmt.Sprintf("load balancer %s must be replaced (%s) but has deletion protection on; turn it off in AWS to let fleetgate replace it",
		e.LoadBalancer, strings.Join(e.Changes, ", "))
}

// DeletionProtectedError: Delete left a load balancer because its deletion protection is on.
type DeletionProtectedError struct {
	LoadBalancer string
}

func (e *DeletionProtectedError) Error() string {
	return fmt.Sprintf("load balancer %s has deletion protection on: it and what it uses are kept; turn protection off in AWS to let fleetgate delete it", e.LoadBalancer)
}

// hasCode reports whether err is an AWS API error with one of codes.
func hasCode(err error, codes ...string) bool {
	return slices.Contains(codes, errorCode(err)) && errorCode(err) != ""
}
