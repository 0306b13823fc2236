package aws

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"

	"github.com/fleetgate/fleetgate/dataplane/ir"
)

const certificateIDPrefix = "cert/"

// listenerCertificates are the class's ACM ARNs when it names some, else the listener's Secrets
// imported into ACM, the first being the default (the IR's order: most specific first, its
// first the default).
func (b *builder) listenerCertificates(l *ir.Listener) ([]string, error) {
	if len(b.o.CertificateARNs) > 0 {
		return append([]string(nil), b.o.CertificateARNs...), nil
	}
	if len(l.Certificates) == 0 {
		return nil, fmt.Errorf("listener %d: %s needs a certificate", l.Port, l.Protocol)
	}
	ids := make([]string, 0, len(l.Certificates))
	for _, c := range l.Certificates {
		cert, err := certificate(c)
		if err != nil {
			return nil, fmt.Errorf("listener %d: %w", l.Port, err)
		}
		if have, ok := b.certs[cert.ID]; ok && have.Fingerprint != cert.Fingerprint {
			return nil, fmt.Errorf("listener %d: certificate %s differs from the one of the same name on another listener", l.Port, c.Name)
		}
		b.certs[cert.ID] = cert
		ids = append(ids, cert.ID)
	}
	return ids, nil
}

func certificateID(name string) string { return certificateIDPrefix + shortHash(12, name) }

// certificate splits a listener Secret's chain into ImportCertificate's leaf and chain. Its ID
// comes from the Secret's name, so a rotation keeps the ID and changes the Fingerprint, which
// makes the deployer re-import into the same ACM certificate (listeners keep its ARN).
func certificate(c ir.Certificate) (Certificate, error) {
	var blocks [][]byte
	rest := c.CertPEM
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			blocks = append(blocks, pem.EncodeToMemory(blk))
		}
	}
	if len(blocks) == 0 {
		return Certificate{}, fmt.Errorf("certificate %s: no PEM CERTIFICATE block", c.Name)
	}
	out := Certificate{
		ID:      certificateID(c.Name),
		CertPEM: blocks[0],
		KeyPEM:  c.KeyPEM,
	}
	if len(blocks) > 1 {
		out.ChainPEM = bytes.Join(blocks[1:], nil)
	}
	h := sha256.New()
	for _, part := range [][]byte{out.CertPEM, out.ChainPEM, out.KeyPEM} {
		h.Write(part)
		h.Write([]byte{0})
	}
	out.Fingerprint = hex.EncodeToString(h.Sum(nil))
	return out, nil
}
