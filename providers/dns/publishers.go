package dns

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/external-dns/endpoint"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// Publishers is what the DNS controller calls: one Publisher per class, kept across passes (the
// delete budget's memory lives in it) and rebuilt when the class's DNS options change or a pass
// failed (a rotated TSIG secret is read again). Safe for concurrent use.
type Publishers struct {
	base Options

	mu      sync.Mutex
	byClass map[string]*classPublisher
	// retiring remove a class's records from where it published before (its spec.dns went or
	// changed); a class may publish elsewhere meanwhile, so they are kept apart from byClass.
	retiring map[retireKey]*classPublisher
}

type classPublisher struct {
	opts   v1alpha1.DNSOptions
	except []string
	p      *Publisher
	// asked: a retiring publisher was called since its class last published. One that was not
	// is dropped at the class's next Sync: the class publishes there again, and the controller
	// no longer retires it.
	asked bool
}

// retireKey is a class and the options it is retired from, encoded.
type retireKey struct{ class, opts string }

// NewPublishers takes the operator's pieces of Options (FleetID, Secrets, Log, Metrics, Now); DNS
// and Class come with each Sync.
func NewPublishers(base Options) *Publishers {
	return &Publishers{base: base, byClass: map[string]*classPublisher{}, retiring: map[retireKey]*classPublisher{}}
}

// Sync publishes owners (see Publisher.Sync) into class's zones as opts says.
func (s *Publishers) Sync(ctx context.Context, class string, opts v1alpha1.DNSOptions, owners map[string][]*endpoint.Endpoint) (Result, error) {
	s.mu.Lock()
	for key, c := range s.retiring {
		if key.class == class {
			if !c.asked {
				delete(s.retiring, key)
			}
			c.asked = false
		}
	}
	s.mu.Unlock()
	p, err := s.publisher(ctx, class, opts)
	if err != nil {
		return Result{}, err
	}
	res, err := p.Sync(ctx, owners)
	if err != nil {
		s.mu.Lock()
		if c := s.byClass[class]; c != nil && c.p == p {
			delete(s.byClass, class)
		}
		s.mu.Unlock()
	}
	return res, err
}

// Publish is Sync for the controllers' DNS publisher: by gateway key, what was not published as
// desired (held by someone else, refused, or not served when read back).
func (s *Publishers) Publish(ctx context.Context, class string, opts v1alpha1.DNSOptions, owners map[string][]*endpoint.Endpoint) (map[string]providers.DNSOwnerOutcome, error) {
	res, err := s.Sync(ctx, class, opts, owners)
	if err != nil {
		return nil, err
	}
	return res.Outcomes(), nil
}

// Retire removes the records class's publisher owns in the zones of opts, except those under the
// domains in keep: the class's spec.dns went, its GatewayClassConfig left the fleet, or it now
// publishes elsewhere (keep are the zones it still publishes into under the same owner ID). Every
// owner is gone for it. The delete budget still applies: deletions above MaxDeletesPerPass wait out
// DeleteGracePeriod, so one config edited by mistake cannot empty a zone at once. done is true once
// nothing is held back; the retiring publisher is then dropped.
func (s *Publishers) Retire(ctx context.Context, class string, opts v1alpha1.DNSOptions, keep []string) (done bool, err error) {
	b, err := json.Marshal(opts)
	if err != nil {
		return false, fmt.Errorf("dns: encoding the options class %s is retired from: %w", class, err)
	}
	key := retireKey{class: class, opts: string(b)}
	s.mu.Lock()
	c := s.retiring[key]
	if c == nil || !slices.Equal(c.except, keep) {
		o := s.base
		o.DNS, o.Class, o.Except = *opts.DeepCopy(), class, slices.Clone(keep)
		if cur := s.byClass[class]; cur != nil && equality.Semantic.DeepEqual(cur.opts, opts) {
			delete(s.byClass, class) // it stopped publishing with these options
		}
		if s.byClass[class] != nil {
			o.Metrics = nil // the class's series are those of where it publishes now
		}
		p, err := New(ctx, o)
		if err != nil {
			s.mu.Unlock()
			return false, err
		}
		c = &classPublisher{opts: o.DNS, except: o.Except, p: p}
		s.retiring[key] = c
	}
	c.asked = true
	s.mu.Unlock()
	res, err := c.p.Sync(ctx, map[string][]*endpoint.Endpoint{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.retiring[key] == c {
			delete(s.retiring, key) // read the credentials again next time
		}
		return false, err
	}
	for _, o := range res.Owners {
		if len(o.Held) > 0 {
			return false, nil
		}
	}
	delete(s.retiring, key)
	return true, nil
}

func (s *Publishers) publisher(ctx context.Context, class string, opts v1alpha1.DNSOptions) (*Publisher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.byClass[class]; c != nil && equality.Semantic.DeepEqual(c.opts, opts) {
		return c.p, nil
	}
	o := s.base
	o.DNS, o.Class = *opts.DeepCopy(), class
	p, err := New(ctx, o)
	if err != nil {
		return nil, err
	}
	s.byClass[class] = &classPublisher{opts: o.DNS, p: p}
	return p, nil
}
