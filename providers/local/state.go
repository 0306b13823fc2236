package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fleetgate/fleetgate/providers"
)

// ownerFile tags a state directory with its gateway, as labels tag a Service: the directory's
// name is a hash, and List must find the gateway from the disk alone.
const ownerFile = "gateway.json"

// stateTag is the content of ownerFile.
type stateTag struct {
	Gateway   string `json:"gateway"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (p *Provider) dir(gateway string) string {
	return filepath.Join(p.opts.Dir, providers.GatewayID(gateway))
}

// writeState makes the gateway's state directory, tagged with its owner, and writes fresh proxy
// credentials into it (the config server's CA may have changed since the last start).
func (p *Provider) writeState(lb *providers.LoadBalancer) (string, error) {
	dir := p.dir(lb.Gateway)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("proxy dir: %w", err)
	}
	tag, err := json.Marshal(stateTag{Gateway: lb.Gateway, Namespace: lb.Namespace, Name: lb.Name})
	if err != nil {
		return "", fmt.Errorf("proxy dir owner: %w", err)
	}
	creds, err := p.opts.Credentials(lb.Gateway)
	if err != nil {
		return "", fmt.Errorf("credentials for %s: %w", lb.Gateway, err)
	}
	files := map[string][]byte{ownerFile: tag, "tls.crt": creds.CertPEM, "tls.key": creds.KeyPEM, "ca.crt": creds.CAPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return dir, nil
}

// listState reads the owners of the state directories. A directory without a readable tag, or
// whose tag does not hash to its name, is not one this provider can delete by key, and is skipped.
func (p *Provider) listState() ([]stateTag, error) {
	entries, err := os.ReadDir(p.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("local: reading %s: %w", p.opts.Dir, err)
	}
	var out []stateTag
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(p.opts.Dir, e.Name(), ownerFile))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("local: reading the owner of %s: %w", e.Name(), err)
		}
		var o stateTag
		if json.Unmarshal(b, &o) != nil || providers.GatewayID(o.Gateway) != e.Name() {
			continue
		}
		out = append(out, o)
	}
	return out, nil
}
