package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// maxRulePriority is ELBv2's highest rule priority.
const maxRulePriority = 50000

// syncRules reconciles the rules of each listener of the Stack. Priorities come from
// assignPriorities (stable: unchanged rules keep theirs). The order of calls never collides
// (PriorityInUse): stale rules that sit on a priority now wanted are deleted first, kept rules
// move only to free priorities (a cycle goes through a free one), and new rules are created
// last. The other stale rules go in cleanup.
func (d *deployer) syncRules(ctx context.Context, st *state, x *executor) error {
	byListener := map[string][]Rule{}
	for _, r := range st.stack.Rules {
		byListener[r.Listener] = append(byListener[r.Listener], r)
	}
	for _, l := range st.stack.Listeners {
		if err := d.syncListenerRules(ctx, st, x, l, byListener[l.ID]); err != nil {
			return err
		}
	}
	return nil
}

func (d *deployer) syncListenerRules(ctx context.Context, st *state, x *executor, l Listener, rules []Rule) error {
	owned := d.owner(st.stack.GatewayID)
	live := map[string]*liveRule{}
	occupied := map[int32]bool{}
	var stale []*liveRule
	if ll := st.liveListener(l); ll != nil {
		for i := range ll.rules {
			r := &ll.rules[i]
			occupied[r.priority] = true
			if !owned(r.tags) {
				continue // not ours (added by hand): left alone
			}
			if id := r.tags[TagResource]; live[id] == nil && slices.ContainsFunc(rules, func(w Rule) bool { return w.ID == id }) {
				live[id] = r
			} else {
				stale = append(stale, r)
			}
		}
	}
	order := make([]string, len(rules))
	existing := map[string]int32{}
	for i, r := range rules {
		order[i] = r.ID
		if lr := live[r.ID]; lr != nil {
			existing[r.ID] = lr.priority
		}
	}
	prio := assignPriorities(order, existing)
	wanted := map[int32]bool{}
	for _, p := range prio {
		wanted[p] = true
	}
	for _, r := range stale {
		if wanted[r.priority] { // deleted now to free the priority, it would go in cleanup anyway
			if err := d.deleteRule(ctx, x, r); err != nil {
				return err
			}
			delete(occupied, r.priority)
			continue
		}
		st.staleRules = append(st.staleRules, r)
	}
	if err := d.moveRules(ctx, x, l, live, prio, occupied); err != nil {
		return err
	}
	listenerARN := st.listenerARN[l.ID]
	tgIDs := st.tgIDs()
	for _, r := range rules {
		actions, err := st.sdkActions(r.Action)
		if err != nil {
			return fmt.Errorf("rule %s: %w", r.ID, err)
		}
		tags := d.tagsFor(st.stack, r.ID, nil)
		resource := l.ID + " " + r.ID
		detail := conditionsText(r.Conditions) + " → " + actionText(r.Action)
		lr := live[r.ID]
		if lr == nil {
			in := &elbv2.CreateRuleInput{ListenerArn: &listenerARN, Priority: aws.Int32(prio[r.ID]), Conditions: sdkConditions(r.Conditions), Actions: actions, Tags: elbTags(tags)}
			if err := x.do(Call{"CreateRule", resource, fmt.Sprintf("%s (priority %d)", detail, prio[r.ID])}, func() error {
				_, err := d.elb.CreateRule(ctx, in)
				return err
			}); err != nil {
				return err
			}
			continue
		}
		if liveConditionsText(lr.r.Conditions) != conditionsText(r.Conditions) || liveActionText(lr.r.Actions, tgIDs) != actionText(r.Action) {
			in := &elbv2.ModifyRuleInput{RuleArn: lr.r.RuleArn, Conditions: sdkConditions(r.Conditions), Actions: actions}
			if err := x.do(Call{"ModifyRule", resource, detail}, func() error {
				_, err := d.elb.ModifyRule(ctx, in)
				return err
			}); err != nil {
				return err
			}
		}
		if err := d.syncELBTags(ctx, x, resource, aws.ToString(lr.r.RuleArn), lr.tags, tags); err != nil {
			return err
		}
	}
	return nil
}

// moveRules sets the priorities of kept rules to prio, in rounds of one SetRulePriorities call:
// ELBv2 (and moto) check every pair of a call against the priorities before it, so a round moves
// only rules whose target is free already (a chain takes a round per link); a cycle goes
// through a free priority.
func (d *deployer) moveRules(ctx context.Context, x *executor, l Listener, live map[string]*liveRule, prio map[string]int32, occupied map[int32]bool) error {
	pending := map[string]int32{}
	for id, r := range live {
		if r.priority != prio[id] {
			pending[id] = prio[id]
		}
	}
	for len(pending) > 0 {
		round := map[string]int32{}
		for id, p := range pending {
			if !occupied[p] {
				round[id] = p
				delete(pending, id)
			}
		}
		if len(round) == 0 {
			free := freePriority(occupied)
			if free == 0 {
				return fmt.Errorf("listener %s: no free rule priority to move rules through", l.ID)
			}
			round[slices.Sorted(maps.Keys(pending))[0]] = free
		}
		ids := slices.Sorted(maps.Keys(round))
		pairs := make([]elbtypes.RulePriorityPair, len(ids))
		for i, id := range ids {
			pairs[i] = elbtypes.RulePriorityPair{RuleArn: live[id].r.RuleArn, Priority: aws.Int32(round[id])}
		}
		if err := x.do(Call{"SetRulePriorities", l.ID, priorityDetail(ids, pairs)}, func() error {
			_, err := d.elb.SetRulePriorities(ctx, &elbv2.SetRulePrioritiesInput{RulePriorities: pairs})
			return err
		}); err != nil {
			return err
		}
		for _, id := range ids {
			delete(occupied, live[id].priority)
			occupied[round[id]] = true
			live[id].priority = round[id]
		}
	}
	return nil
}

// freePriority is the highest priority not occupied, 0 if none is.
func freePriority(occupied map[int32]bool) int32 {
	for p := int32(maxRulePriority); p > 0; p-- {
		if !occupied[p] {
			return p
		}
	}
	return 0
}

func priorityDetail(ids []string, pairs []elbtypes.RulePriorityPair) string {
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = ids[i] + "=" + strconv.Itoa(int(aws.ToInt32(p.Priority)))
	}
	return strings.Join(parts, " ")
}

func (d *deployer) deleteRule(ctx context.Context, x *executor, r *liveRule) error {
	return x.do(Call{"DeleteRule", ruleName(r), "priority " + strconv.Itoa(int(r.priority))}, func() error {
		_, err := d.elb.DeleteRule(ctx, &elbv2.DeleteRuleInput{RuleArn: r.r.RuleArn})
		if isNotFound(err) {
			return nil
		}
		return err
	})
}

func ruleName(r *liveRule) string {
	if id := r.tags[TagResource]; id != "" {
		return id
	}
	return aws.ToString(r.r.RuleArn)
}
