package providers

// DNSOwnerOutcome is what a DNS publisher did with one gateway's records. The zero value: every
// record is published, and the zone serves it as written.
type DNSOwnerOutcome struct {
	// Lost maps names held in the zone by someone else to who holds them; they are never
	// overwritten.
	Lost map[string]string
	// Refused maps names that cannot be published to why.
	Refused map[string]string
	// Unserved are names whose records the zone accepted but, read back, does not hold as written.
	Unserved []string
}
