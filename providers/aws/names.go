package aws

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxNameLen is the ELBv2 limit on load balancer and target group names (CreateLoadBalancer,
// CreateTargetGroup: "a maximum of 32 characters").
const maxNameLen = 32

// nameHashLen hex characters of SHA-256 end every name: 40 bits, so two names in one account and
// region collide with negligible probability.
const nameHashLen = 10

// shortHash is a stable hash of parts (separated so that ("ab","c") and ("a","bc") differ).
func shortHash(n int, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:n]
}

// loadBalancerName is "fg-<readable>-<hash>". The hash covers what identifies the load balancer
// (gateway key and fleet) and what cannot change in place (type and scheme), so a change of those
// gives a new name and the deployer can create the replacement before deleting the old one.
func loadBalancerName(gateway, fleet, name, lbType, scheme string) string {
	return readableName(name, shortHash(nameHashLen, gateway, fleet, lbType, scheme))
}

// targetGroupName is "fg-<readable>-<hash>" likewise: the hash covers the target group's Stack ID
// (backend, cluster, port, protocol), the gateway and fleet (names are unique per account and
// region) and the immutable properties the ID does not hold (VPC, target type, protocol version).
func targetGroupName(id, gateway, fleet, vpc, targetType, protocolVersion, readable string) string {
	return readableName(readable, shortHash(nameHashLen, id, gateway, fleet, vpc, targetType, protocolVersion))
}

// readableName fits "fg-", the sanitized readable part and "-hash" into maxNameLen, cutting the
// readable part (or leaving it out when nothing of it is left).
func readableName(readable, hash string) string {
	room := maxNameLen - len("fg-") - len("-") - len(hash)
	r := strings.Trim(sanitizeName(readable), "-")
	if len(r) > room {
		r = strings.TrimRight(r[:room], "-")
	}
	if r == "" {
		return "fg-" + hash
	}
	return "fg-" + r + "-" + hash
}

// sanitizeName keeps [a-z0-9] (lower-cased, for humans reading the console) and turns every run
// of anything else into one '-'.
func sanitizeName(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
			dash = false
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return b.String()
}
