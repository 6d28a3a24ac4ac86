package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// leavingAttribute is the attribute the user changes to fix a refused
// choice of leaving brokers.
func leavingAttribute(e *engine.LeavingError) path.Path {
	if e.Field == engine.FieldNamedBrokers {
		return path.Root("remove_broker_ids")
	}
	return path.Root("broker_count")
}

// leavingProblem says why the engine refused a choice of leaving brokers,
// and what to write in the configuration instead.
func leavingProblem(e *engine.LeavingError) string {
	switch e.Reason {
	case engine.NamedTwice:
		return fmt.Sprintf("broker %d is named twice", e.Brokers[0])
	case engine.NotRegistered:
		return fmt.Sprintf("broker %d is not registered; the registered brokers are %v. Name only registered brokers in remove_broker_ids",
			e.Brokers[0], e.Registered)
	case engine.NamedOnScaleOut:
		return fmt.Sprintf("brokers %v are named to remove, but broker_count %d is above the %d brokers registered: "+
			"a scale-out removes no broker. Remove remove_broker_ids, or set broker_count to %d to replace them",
			e.Brokers, e.Target, e.Current, e.Current)
	case engine.DeadOnScaleOut:
		return fmt.Sprintf("brokers %v are dead (fenced or offline), so their partitions are under-replicated, and a scale-out "+
			"cannot heal them. Remove them first (broker_count = %d, or remove_broker_ids = %v), or replace them "+
			"(remove_broker_ids = %v with broker_count = %d)",
			e.Dead, e.Current-len(e.Dead), e.Dead, e.Dead, e.Current)
	case engine.NamedCountMismatch:
		return fmt.Sprintf("%d brokers are named to remove, but going from %d to %d brokers removes %d; "+
			"name %d, or set broker_count to %d", len(e.Brokers), e.Current, e.Target, e.Current-e.Target, e.Current-e.Target, e.Current-len(e.Brokers))
	case engine.DeadKept:
		return fmt.Sprintf("brokers %v are dead (fenced or offline), but the change removes live brokers %v and keeps them. "+
			"Heal the dead brokers first: remove them (remove_broker_ids = %v) or replace them", e.Dead, e.Brokers, e.Dead)
	case engine.BelowReplicationFactor:
		return fmt.Sprintf("removing brokers %v leaves %d brokers, fewer than the replication factor %d of topic %s. "+
			"Keep at least %d brokers, or lower the replication factor of %s first",
			e.Brokers, e.Staying, e.ReplicationFactor, e.Topic, e.ReplicationFactor, e.Topic)
	default:
		return e.Error()
	}
}
