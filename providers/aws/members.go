package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// memberAccess builds the member rules of stack (Build's, for lb in net with the class's options
// o). A member that cannot be built (no region, a Secret outside the operator's namespace, an
// invalid rule) is a model error, before any call.
func (p *Provider) memberAccess(ctx context.Context, stack *Stack, lb *providers.LoadBalancer, net Network, o v1alpha1.AWSOptions) ([]MemberAccess, error) {
	members, err := p.members(ctx)
	if err != nil || len(members) == 0 {
		return nil, err
	}
	access, err := buildMemberAccess(stack, lb, net, o, members, p.o.Namespace)
	if err != nil {
		return nil, &invalidError{fmt.Errorf("gateway %s: %w", lb.Gateway, err)}
	}
	return access, nil
}

func (p *Provider) members(ctx context.Context) (map[string]v1alpha1.MemberClusterSpec, error) {
	if p.o.Members == nil {
		return nil, nil
	}
	members, err := p.o.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the member clusters: %w", err)
	}
	return members, nil
}

// syncMembers brings the member rules of every account of s to s.Members (lbSG is the load
// balancer's security group), through x, recording each account before its first rule there.
// Every account is tried; an error names its members and the AWS error code, so that a member
// with broken credentials is plain in the Gateway's status and leaves the others' rules in place.
func (p *Provider) syncMembers(ctx context.Context, x *executor, s *Stack, lbSG string) error {
	p.sweeping.RLock()
	defer p.sweeping.RUnlock()
	var errs []error
	for _, a := range s.Members {
		d, _, err := p.deployer(ctx, a.Account)
		if err == nil && !x.dry && len(a.Rules) > 0 {
			err = p.record(ctx, a)
		}
		if err == nil {
			err = d.syncMemberRules(ctx, x, s, a.Rules, lbSG)
		}
		if err != nil {
			errs = append(errs, memberError(a.Members, err))
		}
	}
	return errors.Join(errs...)
}

// plan is every call Deploy and syncMembers would make for s, none of them made.
func (p *Provider) plan(ctx context.Context, d *deployer, s *Stack) ([]Call, error) {
	dry := *s
	dry.DryRun = true
	dep, err := d.Deploy(ctx, &dry)
	if err != nil {
		return dep.Calls, err
	}
	x := &executor{dry: true}
	err = p.syncMembers(ctx, x, s, dep.SecurityGroupID)
	return append(dep.Calls, x.calls...), err
}

// memberAccounts are the accounts of the members' security groups, for the class options o, by
// accountKey.
func (p *Provider) memberAccounts(members map[string]v1alpha1.MemberClusterSpec, o v1alpha1.AWSOptions) map[string]MemberAccess {
	out := map[string]MemberAccess{}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		spec := members[name]
		if spec.Provider.AWS == nil {
			continue
		}
		account, err := memberAccount(o, spec, p.o.Namespace)
		if err != nil {
			continue // such a member never got rules
		}
		a := out[accountKey(account)]
		a.Account = account
		a.Members = append(a.Members, name)
		out[accountKey(account)] = a
	}
	return out
}

// deleteMembers revokes gatewayID's member rules in every member account of class o.
func (p *Provider) deleteMembers(ctx context.Context, o v1alpha1.AWSOptions, gatewayID string) error {
	members, err := p.members(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range p.memberAccounts(members, o) {
		d, _, err := p.deployer(ctx, a.Account)
		if err == nil {
			err = d.deleteMemberRules(ctx, &executor{}, gatewayID)
		}
		if err != nil {
			errs = append(errs, memberError(a.Members, err))
		}
	}
	return errors.Join(errs...)
}

// decodedClass is a class's options as List decoded them, and its JSON.
type decodedClass struct {
	o   v1alpha1.AWSOptions
	raw json.RawMessage
}

// listMembers adds to found the gateways with member rules in the member accounts of class o
// (raw, its JSON) not visited yet (seen), for the orphan sweep.
func (p *Provider) listMembers(ctx context.Context, members map[string]v1alpha1.MemberClusterSpec, o v1alpha1.AWSOptions, raw json.RawMessage,
	seen map[string]bool, found map[string]*providers.LoadBalancer) error {
	var errs []error
	for key, a := range p.memberAccounts(members, o) {
		if seen[key] {
			continue
		}
		seen[key] = true
		d, _, err := p.deployer(ctx, a.Account)
		var owned []Owned
		if err == nil {
			owned, err = d.listMemberRules(ctx)
		}
		if err != nil {
			errs = append(errs, memberError(a.Members, err))
			continue
		}
		for _, ow := range owned {
			if _, dup := found[ow.Gateway]; !dup {
				ns, name := providers.SplitKey(ow.Gateway)
				found[ow.Gateway] = &providers.LoadBalancer{Gateway: ow.Gateway, Namespace: ns, Name: name,
					Provider: string(v1alpha1.ProviderAWS), Parameters: raw}
			}
		}
	}
	return errors.Join(errs...)
}

// MemberError is a failure in the account of members' security groups, not the class's: a
// member's credentials refused, say, while the class's work.
type MemberError struct {
	Members []string
	Err     error
}

// Error names the members and the AWS error code.
func (e *MemberError) Error() string {
	who := "member " + strings.Join(e.Members, ", ")
	if len(e.Members) > 1 {
		who = "members " + strings.Join(e.Members, ", ")
	}
	if code := errorCode(e.Err); code != "" {
		return fmt.Sprintf("security groups of %s (AWS error %s): %v", who, code, e.Err)
	}
	return fmt.Sprintf("security groups of %s: %v", who, e.Err)
}

func (e *MemberError) Unwrap() error { return e.Err }

// MemberNames are the members the error concerns, for whoever reports it on them.
func (e *MemberError) MemberNames() []string { return e.Members }

func memberError(members []string, err error) error {
	if ce, ok := errors.AsType[*providers.CredentialsError](err); ok {
		err = memberCredentials{ce}
	}
	return &MemberError{Members: members, Err: err}
}

// memberCredentials keeps the words and the SDK error of a member account's refused credentials
// but not their type: a CredentialsError is the class's account, which its CloudAccountReady
// condition reports, and the class's account works.
type memberCredentials struct{ ce *providers.CredentialsError }

func (m memberCredentials) Error() string { return m.ce.Error() }
func (m memberCredentials) Unwrap() error { return m.ce.Err }
