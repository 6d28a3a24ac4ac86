package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// resourceSettings is the rebalance block and demote_broker_ids converted
// for the engine: every plan and apply of the resource keeps the demoted
// brokers off preferred leadership, a scale-out or scale-in included.
func resourceSettings(ctx context.Context, m *clusterResourceModel) (clusterSettings, diag.Diagnostics) {
	s, diags := rebalanceSettings(m.Rebalance)
	ids, ds := brokerIDs(ctx, m.DemoteBrokerIDs)
	diags.Append(ds...)
	slices.Sort(ids)
	s.options.DemotedBrokers = ids
	return s, diags
}

// balanceKept is what the resource keeps balanced at an unchanged broker
// count: everything with keep_balanced; preferred leaders alone with
// keep_leaders_balanced, while demote_broker_ids names brokers, and in the
// apply that changes it (prior is the state before it), so that brokers
// no longer demoted lead their share again.
func balanceKept(m, prior *clusterResourceModel) executor.Balance {
	switch {
	case keepBalanced(m.Rebalance):
		return executor.BalanceAll
	case m.Rebalance != nil && m.Rebalance.KeepLeaders.ValueBool(),
		len(m.DemoteBrokerIDs.Elements()) > 0,
		prior != nil && !prior.DemoteBrokerIDs.Equal(m.DemoteBrokerIDs):
		return executor.BalanceLeaders
	}
	return executor.BalanceNone
}

// checkDemotions checks demoted against the cluster this run read
// (demotionProblems); false when the plan must stop. A cluster it cannot
// read is the cost's own error to report, not this check's.
func (r *ClusterResource) checkDemotions(ctx context.Context, demoted, leaving []int32, diags *diag.Diagnostics) bool {
	live, err := r.data.kafka.RecentSnapshot(ctx)
	if err != nil {
		return true
	}
	demotionProblems(demoted, kafka.EngineCluster(live), leaving, diags)
	return !diags.HasError()
}

// demotionProblems refuses, at plan time, demote_broker_ids that name every
// broker that stays: then no partition could change its leader. An id that
// is not registered only warns: a demoted broker that a scale-in removed
// leaves a harmless id behind, which must not fail every later plan, as a
// typo must not pass unseen.
func demotionProblems(demoted []int32, c engine.Cluster, leaving []int32, diags *diag.Diagnostics) {
	if len(demoted) == 0 {
		return
	}
	var registered, staying []int32
	for _, b := range c.Brokers {
		registered = append(registered, b.ID)
		if !slices.Contains(leaving, b.ID) {
			staying = append(staying, b.ID)
		}
	}
	slices.Sort(registered)
	var unknown []int32
	for _, id := range demoted {
		if !slices.Contains(registered, id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		diags.AddAttributeWarning(path.Root("demote_broker_ids"), "Brokers to demote not registered",
			fmt.Sprintf("Brokers %v are not registered (the registered brokers are %v), so demoting them does nothing. "+
				"Remove them from demote_broker_ids once they are gone for good.", unknown, registered))
	}
	if len(staying) == 0 {
		return
	}
	for _, id := range staying {
		if !slices.Contains(demoted, id) {
			return
		}
	}
	diags.AddAttributeError(path.Root("demote_broker_ids"), "Every broker demoted",
		fmt.Sprintf("demote_broker_ids names every broker that stays (%v), so no partition could move its leadership. Leave at least one out.", staying))
}

// leaderChanges says how the plan moves preferred leadership, broker by
// broker, as "broker 3: 14 to 0, broker 1: 11 to 14"; "" when it moves
// none.
func leaderChanges(p *engine.Plan) string {
	if p == nil {
		return ""
	}
	var parts []string
	for _, b := range p.Brokers {
		if b.Before.Leaders != b.After.Leaders {
			parts = append(parts, fmt.Sprintf("broker %d: %d to %d", b.Broker, b.Before.Leaders, b.After.Leaders))
		}
	}
	return strings.Join(parts, ", ")
}
