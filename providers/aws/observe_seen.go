package aws

import (
	"sync"
)

// seenTags remembers the tags of the load balancers and target groups of an account by ARN, as
// last read, so that observe does not ask again for those that are not its gateway's.
type seenTags struct {
	mu   sync.Mutex
	tags map[string]map[string]string
}

func newSeenTags() *seenTags { return &seenTags{tags: map[string]map[string]string{}} }

func (s *seenTags) get(arn string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tags[arn]
	return t, ok
}

// update records read (tags by ARN) and forgets every ARN not in listed, the account's current
// load balancers and target groups, so that the cache holds no more than the account.
func (s *seenTags) update(listed []string, read map[string]map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := make(map[string]map[string]string, len(listed))
	for _, arn := range listed {
		if t, ok := read[arn]; ok {
			keep[arn] = t
		} else if t, ok := s.tags[arn]; ok {
			keep[arn] = t
		}
	}
	s.tags = keep
}
