package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// soakAddress is the address readyProvider gives every load balancer.
const soakAddress = "198.18.9.1"

// readyProvider answers with a load balancer that is ready at once.
type readyProvider struct{}

func (readyProvider) Capabilities(json.RawMessage) (providers.Capabilities, error) {
	return providers.FullCapabilities(), nil
}

func (readyProvider) Ensure(context.Context, *providers.LoadBalancer) (providers.Status, error) {
	return providers.Status{Ready: true, Reason: providers.ReasonProgrammed,
		Addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: soakAddress}}}, nil
}

func (readyProvider) Delete(context.Context, *providers.LoadBalancer) error { return nil }

func (readyProvider) List(context.Context) ([]providers.LoadBalancer, error) { return nil, nil }

// ackingConfigs is a config server whose proxies ACK every new config after a few milliseconds,
// as the real ones do, and tell it through onAck (the operator's delivery channel).
type ackingConfigs struct {
	onAck func()

	mu      sync.Mutex
	configs map[string][]byte
	version map[string]uint64
	acked   map[string]uint64
	last    uint64
}

func newAckingConfigs(onAck func()) *ackingConfigs {
	return &ackingConfigs{onAck: onAck, configs: map[string][]byte{}, version: map[string]uint64{}, acked: map[string]uint64{}}
}

func (s *ackingConfigs) SetConfig(gateway string, cfg *ir.Config) uint64 {
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(fmt.Sprintf("config of %s: %v", gateway, err)) // ir.Config is serializable by contract
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.version[gateway]; ok && bytes.Equal(b, s.configs[gateway]) {
		return v // an unchanged config keeps its version
	}
	s.last++
	v := s.last
	s.configs[gateway], s.version[gateway] = b, v
	time.AfterFunc(time.Duration(5+rand.IntN(60))*time.Millisecond, func() {
		s.mu.Lock()
		if s.acked[gateway] < v {
			s.acked[gateway] = v
		}
		s.mu.Unlock()
		s.onAck()
	})
	return v
}

func (s *ackingConfigs) Proxies(gateway string) []controllers.ProxyState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []controllers.ProxyState{{Node: "proxy", Acked: s.acked[gateway]}}
}

func (s *ackingConfigs) RemoveGateway(gateway string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.configs, gateway)
	delete(s.version, gateway)
	delete(s.acked, gateway)
}

// errorLog keeps the error-level lines of every errorSink derived from it.
type errorLog struct {
	mu     sync.Mutex
	errors []string
}

// errorSink is a logr sink that records error lines in its errorLog and drops the rest.
type errorSink struct {
	log    *errorLog
	name   string
	values []any
}

func (s *errorSink) Init(logr.RuntimeInfo)    {}
func (s *errorSink) Enabled(int) bool         { return false }
func (s *errorSink) Info(int, string, ...any) {}

func (s *errorSink) Error(err error, msg string, kv ...any) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.errors = append(s.log.errors, fmt.Sprintf("%s: %s: %v %v %v", s.name, msg, err, s.values, kv))
}

func (s *errorSink) WithValues(kv ...any) logr.LogSink {
	return &errorSink{log: s.log, name: s.name, values: append(slices.Clone(s.values), kv...)}
}

func (s *errorSink) WithName(name string) logr.LogSink {
	return &errorSink{log: s.log, name: s.name + "/" + name, values: s.values}
}
