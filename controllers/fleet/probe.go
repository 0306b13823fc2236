package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// probe asks the member's /version every interval until ctx ends. FailureThreshold consecutive
// failures make it unhealthy (the pipeline stops reading it); the first success after that marks it
// stale, and the reconciler rebuilds its caches before it is read again.
func (f *Fleet) probe(ctx context.Context, m *member, cfg *rest.Config) {
	log := f.o.Log.WithValues("cluster", m.name)
	rc, err := versionClient(cfg, f.o.ProbeTimeout)
	if err != nil {
		log.Error(err, "member probe disabled")
		return
	}
	t := time.NewTicker(f.o.ProbeInterval)
	defer t.Stop()
	for {
		v, err := serverVersion(ctx, rc, f.o.ProbeTimeout)
		if ctx.Err() != nil {
			return
		}
		if f.record(m, v, err) {
			f.changed(m.name)
			f.pokeStatus(m.name)
		}
		if err == nil {
			m.kinds.recheck(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// record stores a probe result and reports whether the member's usability changed.
func (f *Fleet) record(m *member, v string, err error) bool {
	f.mu.Lock()
	before := m.usable()
	if err != nil {
		m.failures++
		m.probeErr = err.Error()
		if m.failures >= f.o.FailureThreshold && m.healthy {
			m.healthy = false
			f.o.Log.Info("member unreachable", "cluster", m.name, "error", err.Error())
		}
	} else {
		if !m.healthy {
			m.stale = true // resync: the caches may have missed events while it was away
			f.o.Log.Info("member answers again", "cluster", m.name)
		}
		m.healthy, m.failures, m.probeErr, m.version = true, 0, "", v
	}
	after, stale := m.usable(), m.stale
	f.mu.Unlock()
	if before && !after && f.o.Lost != nil {
		f.o.Lost(m.name)
	}
	return before != after || (err == nil && stale)
}

func versionClient(cfg *rest.Config, timeout time.Duration) (*rest.RESTClient, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	cfg.GroupVersion = nil
	cfg.APIPath = ""
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("probe client: %w", err)
	}
	return rc, nil
}

func serverVersion(ctx context.Context, rc *rest.RESTClient, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := rc.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("probing /version: %w", err)
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("decoding /version: %w", err)
	}
	return info.GitVersion, nil
}
