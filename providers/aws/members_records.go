package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// MemberRecords keeps, durably on each MemberCluster, the accounts whose security groups may hold
// this fleet's member rules for it. Specs alone cannot lead back there: once a member names
// another account, drops its aws section or is deleted (perhaps while the operator was down), no
// spec names the old account any more.
type MemberRecords interface {
	// Recorded returns the recorded accounts of every member that has any, by member name.
	Recorded(ctx context.Context) (map[string][]v1alpha1.AWSOptions, error)
	// Record adds account to member's record and holds the member with a finalizer; it returns
	// before any rule is made there.
	Record(ctx context.Context, member string, account v1alpha1.AWSOptions) error
	// Forget drops accounts from member's record; the finalizer goes with the last one.
	Forget(ctx context.Context, member string, accounts []v1alpha1.AWSOptions) error
}

// record has every member of a recorded in a's account before syncMembers makes rules there.
// Records known from this process (made, or read by the last sweep) are not written again.
func (p *Provider) record(ctx context.Context, a MemberAccess) error {
	if p.o.Records == nil {
		return nil
	}
	key := accountKey(a.Account)
	for _, m := range a.Members {
		p.recMu.Lock()
		known := p.recorded[m][key]
		p.recMu.Unlock()
		if known {
			continue
		}
		if err := p.o.Records.Record(ctx, m, a.Account); err != nil {
			return fmt.Errorf("recording the account of member %s's security groups: %w", m, err)
		}
		p.recMu.Lock()
		if p.recorded[m] == nil {
			p.recorded[m] = map[string]bool{}
		}
		p.recorded[m][key] = true
		p.recMu.Unlock()
	}
	return nil
}

// SweepMembers revokes this fleet's member rules in every recorded account on the security groups
// no live member names there any more (for any class), then forgets the accounts no member's spec
// leads to: a member that named other groups or another account, dropped its aws section or is
// being deleted (the caller leaves such members out of Options.Members). Rules on groups still
// named stay: the gateways' own Ensure brings them to their targets. It excludes every member rule
// write of Ensure while it runs, so that an account is never forgotten while rules are being made
// in it.
func (p *Provider) SweepMembers(ctx context.Context) error {
	if p.o.Records == nil {
		return nil
	}
	p.sweeping.Lock()
	defer p.sweeping.Unlock()
	recorded, err := p.o.Records.Recorded(ctx)
	if err != nil {
		return fmt.Errorf("reading the recorded member accounts: %w", err)
	}
	members, err := p.members(ctx)
	if err != nil {
		return err
	}
	classes, err := p.classes(ctx)
	if err != nil {
		return err
	}
	// named: groups live members name per account; leads: the accounts each member's spec leads to.
	named, leads := map[string][]string{}, map[string]map[string]bool{}
	for name, spec := range members {
		if spec.Provider.AWS == nil {
			continue
		}
		leads[name] = map[string]bool{}
		for _, c := range classes {
			a, err := memberAccount(c.o, spec, p.o.Namespace)
			if err != nil {
				continue // such a member gets no rules
			}
			k := accountKey(a)
			named[k] = append(named[k], spec.Provider.AWS.SecurityGroups...)
			leads[name][k] = true
		}
	}
	accounts, holders := map[string]v1alpha1.AWSOptions{}, map[string][]string{}
	cache := map[string]map[string]bool{}
	for _, m := range slices.Sorted(maps.Keys(recorded)) {
		cache[m] = map[string]bool{}
		for _, a := range recorded[m] {
			k := accountKey(a)
			accounts[k] = a
			holders[k] = append(holders[k], m)
			cache[m][k] = true
		}
	}
	p.recMu.Lock()
	p.recorded = cache
	p.recMu.Unlock()
	stale := map[string][]v1alpha1.AWSOptions{}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(accounts)) {
		d, _, err := p.deployer(ctx, accounts[k])
		if err == nil {
			err = d.pruneMemberRules(ctx, &executor{}, named[k])
		}
		if err != nil {
			errs = append(errs, memberError(holders[k], err))
			continue
		}
		for _, m := range holders[k] {
			if !leads[m][k] {
				stale[m] = append(stale[m], accounts[k])
			}
		}
	}
	for _, m := range slices.Sorted(maps.Keys(stale)) {
		if err := p.o.Records.Forget(ctx, m, stale[m]); err != nil {
			errs = append(errs, fmt.Errorf("forgetting the accounts of member %s: %w", m, err))
			continue
		}
		p.recMu.Lock()
		for _, a := range stale[m] {
			delete(p.recorded[m], accountKey(a))
		}
		p.recMu.Unlock()
	}
	return errors.Join(errs...)
}
