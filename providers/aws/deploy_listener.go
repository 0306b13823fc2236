package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// syncListeners creates missing listeners and puts protocol, port, default certificate, SSL
// policy and default action back on existing ones (one ModifyListener), then adds and removes
// the other certificates.
func (d *deployer) syncListeners(ctx context.Context, st *state, x *executor) error {
	if !st.lbCreated {
		var err error
		if st.listeners, err = d.observeListeners(ctx, st.lbARN); err != nil {
			return err
		}
	}
	st.listenerKeep = map[string]bool{}
	for _, l := range st.stack.Listeners {
		certs, err := st.certificateARNs(l.Certificates)
		if err != nil {
			return err
		}
		actions, err := st.sdkActions(l.DefaultAction)
		if err != nil {
			return fmt.Errorf("listener %s: %w", l.ID, err)
		}
		tags := d.tagsFor(st.stack, l.ID, nil)
		live := st.liveListener(l)
		var arn string
		if live == nil {
			if arn, err = d.createListener(ctx, st, x, l, certs, actions, tags); err != nil {
				return err
			}
		} else {
			arn = aws.ToString(live.l.ListenerArn)
			if err := d.updateListener(ctx, st, x, l, live, certs, actions); err != nil {
				return err
			}
			if err := d.syncELBTags(ctx, x, l.ID, arn, live.tags, tags); err != nil {
				return err
			}
		}
		st.listenerARN[l.ID], st.listenerKeep[arn] = arn, true
		var have []string
		if live != nil && len(live.certs) > 1 {
			have = live.certs[1:]
		}
		var want []string
		if len(certs) > 1 {
			want = certs[1:]
		}
		if err := d.syncListenerCertificates(ctx, x, l.ID, arn, have, want); err != nil {
			return err
		}
	}
	return nil
}

// liveListener is the observed listener of l: by tag, else by port (a listener on the port of
// ours must become ours, the port cannot hold two).
func (st *state) liveListener(l Listener) *liveListener {
	for i, ll := range st.listeners {
		if ll.tags[TagResource] == l.ID {
			return &st.listeners[i]
		}
	}
	for i, ll := range st.listeners {
		if aws.ToInt32(ll.l.Port) == l.Port {
			return &st.listeners[i]
		}
	}
	return nil
}

func (d *deployer) createListener(ctx context.Context, st *state, x *executor, l Listener, certs []string, actions []elbtypes.Action, tags map[string]string) (string, error) {
	in := &elbv2.CreateListenerInput{
		LoadBalancerArn: &st.lbARN, Port: &l.Port, Protocol: elbtypes.ProtocolEnum(l.Protocol),
		DefaultActions: actions, SslPolicy: optString(l.SSLPolicy), Tags: elbTags(tags),
	}
	if len(certs) > 0 {
		in.Certificates = []elbtypes.Certificate{{CertificateArn: &certs[0]}}
	}
	arn := placeholder(l.ID)
	err := x.do(Call{"CreateListener", l.ID, fmt.Sprintf("%s:%d → %s", l.Protocol, l.Port, actionText(l.DefaultAction))}, func() error {
		out, err := d.elb.CreateListener(ctx, in)
		if err == nil {
			arn = aws.ToString(out.Listeners[0].ListenerArn)
		}
		return err
	})
	return arn, err
}

func (d *deployer) updateListener(ctx context.Context, st *state, x *executor, l Listener, live *liveListener, certs []string, actions []elbtypes.Action) error {
	var diffs []string
	moved := string(live.l.Protocol) != l.Protocol || aws.ToInt32(live.l.Port) != l.Port
	if moved {
		diffs = append(diffs, fmt.Sprintf("%s:%d", l.Protocol, l.Port))
	}
	var haveDefault string
	if len(live.certs) > 0 {
		haveDefault = live.certs[0]
	}
	if len(certs) > 0 && haveDefault != certs[0] {
		diffs = append(diffs, "certificate "+certs[0])
	}
	if l.SSLPolicy != "" && aws.ToString(live.l.SslPolicy) != l.SSLPolicy {
		diffs = append(diffs, "ssl policy "+l.SSLPolicy)
	}
	if want := actionText(l.DefaultAction); liveActionText(live.l.DefaultActions, st.tgIDs()) != want {
		diffs = append(diffs, "→ "+want)
	}
	if len(diffs) == 0 {
		return nil
	}
	in := &elbv2.ModifyListenerInput{ListenerArn: live.l.ListenerArn, DefaultActions: actions, SslPolicy: optString(l.SSLPolicy)}
	// Port and protocol only when they change: what is left out stays (and moto refuses a UDP,
	// TCP_UDP or TLS protocol in ModifyListener, so a UDP listener's new target group failed).
	if moved {
		in.Port, in.Protocol = &l.Port, elbtypes.ProtocolEnum(l.Protocol)
	}
	if len(certs) > 0 {
		in.Certificates = []elbtypes.Certificate{{CertificateArn: &certs[0]}}
	}
	return x.do(Call{"ModifyListener", l.ID, strings.Join(diffs, "; ")}, func() error {
		_, err := d.elb.ModifyListener(ctx, in)
		return err
	})
}

// syncListenerCertificates reconciles the non-default certificates of a listener (SNI).
func (d *deployer) syncListenerCertificates(ctx context.Context, x *executor, id, arn string, have, want []string) error {
	var add, remove []elbtypes.Certificate
	for _, c := range want {
		if !slices.Contains(have, c) {
			add = append(add, elbtypes.Certificate{CertificateArn: aws.String(c)})
		}
	}
	for _, c := range have {
		if !slices.Contains(want, c) {
			remove = append(remove, elbtypes.Certificate{CertificateArn: aws.String(c)})
		}
	}
	if len(add) > 0 {
		if err := x.do(Call{"AddListenerCertificates", id, certList(add)}, func() error {
			_, err := d.elb.AddListenerCertificates(ctx, &elbv2.AddListenerCertificatesInput{ListenerArn: &arn, Certificates: add})
			return err
		}); err != nil {
			return err
		}
	}
	if len(remove) > 0 {
		return x.do(Call{"RemoveListenerCertificates", id, certList(remove)}, func() error {
			_, err := d.elb.RemoveListenerCertificates(ctx, &elbv2.RemoveListenerCertificatesInput{ListenerArn: &arn, Certificates: remove})
			return err
		})
	}
	return nil
}

func certList(cs []elbtypes.Certificate) string {
	arns := make([]string, len(cs))
	for i, c := range cs {
		arns[i] = aws.ToString(c.CertificateArn)
	}
	return strings.Join(arns, ",")
}
