package xds

import "fmt"

// ReplicaStatus is what one connected proxy replica last did with the configs sent to it.
type ReplicaStatus struct {
	Node string
	// Wire is the wire version the replica's stream speaks; 0 for a refused replica.
	Wire  WireVersion
	Acked uint64
	// Nacked and NackReason describe the replica's latest rejection of a version newer than Acked;
	// both are cleared once the replica ACKs a version at least as new.
	Nacked     uint64
	NackReason string
	// Refused says why the replica cannot be served at all (no common wire version); it is not
	// connected, and counts until it subscribes with a common version or RefusalTTL passes.
	Refused string
}

// GatewayStatus is the delivery state of one gateway.
type GatewayStatus struct {
	// Version is the version of the current config, 0 when there is none.
	Version uint64
	// Replicas are the connected proxy replicas, sorted by node.
	Replicas []ReplicaStatus
}

// Programmed reports whether the gateway is programmed at version v: at least one replica is
// connected and every connected replica ACKed v or newer. Otherwise reason says why, suitable for a
// condition message; a NACK's reason is quoted from the proxy.
func (st GatewayStatus) Programmed(v uint64) (ok bool, reason string) {
	if v == 0 {
		return false, "no configuration has been generated yet"
	}
	if len(st.Replicas) == 0 {
		return false, "no proxy replica is connected"
	}
	for _, r := range st.Replicas {
		if r.Refused != "" {
			return false, fmt.Sprintf("proxy %s cannot be served: %s", r.Node, r.Refused)
		}
	}
	waiting := 0
	for _, r := range st.Replicas {
		if r.Acked >= v {
			continue
		}
		if r.Nacked >= v {
			return false, fmt.Sprintf("proxy %s rejected version %d: %s", r.Node, r.Nacked, r.NackReason)
		}
		waiting++
	}
	if waiting > 0 {
		return false, fmt.Sprintf("waiting for %d of %d proxy replicas to acknowledge version %d", waiting, len(st.Replicas), v)
	}
	return true, ""
}

// Acknowledged is Programmed plus whether a replica refused v (a NACK of v or newer with no ACK
// of it) or cannot be served at all: a refusal is final until a new config or proxy, while waiting
// is not.
func (st GatewayStatus) Acknowledged(v uint64) (ok, rejected bool, reason string) {
	ok, reason = st.Programmed(v)
	for _, r := range st.Replicas {
		if r.Refused != "" || r.Acked < v && r.Nacked >= v {
			rejected = true
		}
	}
	return ok, rejected, reason
}
