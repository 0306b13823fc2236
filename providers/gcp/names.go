package gcp

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// GCE resource names are RFC 1035 labels, `[a-z]([-a-z0-9]{0,61}[a-z0-9])?`. Every name
// fleetgate makes is "fg-<fleet>-<gateway>-<kind>-<hash>": 38 characters at most, lower-case
// hex and dashes only. The fleet and gateway parts make a prefix that lists exactly one fleet's
// or one gateway's resources with a name filter, in every project and scope.
const (
	fleetHashLen   = 8
	gatewayHashLen = 10
	idHashLen      = 10
)

// shortHash is a stable hash of parts (separated so that ("ab","c") and ("a","bc") differ).
func shortHash(n int, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:n]
}

// fleetPrefix starts the name of every resource of the fleet.
func fleetPrefix(fleet string) string { return "fg-" + shortHash(fleetHashLen, fleet) + "-" }

// gatewayPrefix starts the name of every resource of one gateway of the fleet.
func gatewayPrefix(fleet, gateway string) string {
	return fleetPrefix(fleet) + shortHash(gatewayHashLen, gateway) + "-"
}

// prefixFilter is a compute list filter selecting the names that start with prefix (the
// literal is an RE2 matched against the whole name; prefixes are hex and dashes only).
func prefixFilter(prefix string) string { return `name eq "` + prefix + `.*"` }

// nameRE is a GCE resource name.
var nameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
