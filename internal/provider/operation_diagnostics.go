package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// operationTarget says what an operation was for, so that one mapper
// explains the planner's and the executor's errors for every resource.
type operationTarget struct {
	// attempt completes "While attempting to …", e.g. "scale the cluster to
	// 5 brokers".
	attempt string
	// attribute is the setting whose value asked for the operation; the
	// diagnostics point at it.
	attribute path.Path
	// setting names that value in summaries: "broker count".
	setting string
	// subject is what the planner read: "cluster", "topic".
	subject string
	// name is the operation in a summary: "Scaling".
	name string
	// diskFix says what the user can change when the disk check refuses.
	diskFix string
	// unrecorded is an operation nothing persists (a topic's growth): an
	// interrupted one has no saved progress to resume, the next apply
	// simply does it again.
	unrecorded bool
	// refused explains any other failed Kafka call (default kafkaError);
	// an operation on one topic explains Kafka's refusal of the topic.
	refused func(attempt string, err error) diag.Diagnostics
}

func clusterTarget(target int) operationTarget {
	return operationTarget{
		attempt:   fmt.Sprintf("scale the cluster to %d brokers", target),
		attribute: path.Root("broker_count"),
		setting:   "broker count",
		subject:   "cluster",
		name:      "Scaling",
		diskFix:   "Choose a broker count whose brokers can hold the data, free disk, or lower rebalance.min_free_disk_percent.",
	}
}

func replicationFactorTarget(topic string, rf int) operationTarget {
	return operationTarget{
		attempt:   fmt.Sprintf("change topic %s to %d replicas", topic, rf),
		attribute: path.Root("replication_factor"),
		setting:   "replication factor",
		subject:   "topic",
		name:      "Replication factor change",
		diskFix:   "Free disk, add brokers, or choose a lower replication factor.",
	}
}

func growthTarget(topic string, from, to int) operationTarget {
	return operationTarget{
		attempt:    fmt.Sprintf("grow topic %s from %d to %d partitions", topic, from, to),
		attribute:  path.Root("partitions"),
		setting:    "partition count",
		subject:    "topic",
		name:       "Topic growth",
		diskFix:    "Free disk or add brokers.",
		unrecorded: true,
		refused:    topicKafkaError,
	}
}

// planDiagnostics explains a plan the engine refused, on the attribute the
// user can change.
func planDiagnostics(t operationTarget, err error) diag.Diagnostics {
	var inf *engine.InfeasibleError
	var input *engine.InputError
	var leaving *engine.LeavingError
	var out diag.Diagnostics
	switch {
	case errors.As(err, &leaving):
		out.AddAttributeError(leavingAttribute(leaving), "This change of brokers cannot be made",
			fmt.Sprintf("While choosing the brokers that leave, nothing was changed: %s.", leavingProblem(leaving)))
	case errors.As(err, &inf) && inf.Constraint == engine.ConstraintDiskCapacity:
		out.AddAttributeError(t.attribute, "Not enough disk for this "+t.setting,
			fmt.Sprintf("While attempting to plan the change to %s, the disk check failed: %v.\n\n"+
				"Every broker must keep its minimum free disk (%d%% unless rebalance.min_free_disk_percent says otherwise) at "+
				"every step, copies in flight counted. %s", t.attempt, inf, engine.DefaultMinFreeDiskPercent, t.diskFix))
	case errors.As(err, &inf):
		out.AddAttributeError(t.attribute, "This "+t.setting+" cannot be planned",
			fmt.Sprintf("While attempting to plan the change to %s: %v.", t.attempt, inf))
	case errors.As(err, &input):
		out.AddAttributeError(t.attribute, "The "+t.subject+" cannot be planned as it is",
			fmt.Sprintf("While attempting to plan the change to %s: %v.", t.attempt, input))
	default:
		out.Append(kafkaError("plan the change to "+t.attempt, err))
	}
	return out
}

// operationDiagnostics explains an operation the executor stopped: the
// lease, a refused plan, a topic that would shrink, an unhealthy cluster, a
// broker lost mid-way, a conflicting change, partitions Kafka refused or
// that did not get ready, or the apply's own deadline.
func operationDiagnostics(t operationTarget, op *executor.Operation, err error) diag.Diagnostics {
	var out diag.Diagnostics
	var pre *executor.PreCheckError
	var down *executor.BrokerDownError
	var conflict *executor.ConflictError
	var inf *engine.InfeasibleError
	var input *engine.InputError
	var leaving *engine.LeavingError
	var shrink *engine.ShrinkError
	var notReady *executor.PartitionsNotReadyError
	id := ""
	if op != nil {
		id = " (operation " + op.ID + ")"
	}
	if d, ok := leaseDiagnostic(t.attempt+id, t.attribute, err); ok {
		return append(out, d)
	}
	switch {
	case errors.As(err, &shrink):
		out.Append(shrinkDiagnostic(err))
	case errors.As(err, &inf) || errors.As(err, &input) || errors.As(err, &leaving):
		return planDiagnostics(t, err)
	case errors.As(err, &pre):
		out.AddAttributeError(t.attribute, "The cluster is not ready for this change",
			fmt.Sprintf("While checking the cluster before attempting to %s, it was not healthy; nothing was changed.\n\n%v\n\n"+
				"Fix the problems above and apply again.", t.attempt, pre))
	case errors.As(err, &down):
		out.AddAttributeError(t.attribute, "A broker went offline during the reassignment",
			fmt.Sprintf("While attempting to %s%s: %v.", t.attempt, id, down))
	case errors.As(err, &conflict):
		out.AddAttributeError(t.attribute, "Partitions changed outside kafkascale",
			fmt.Sprintf("While attempting to %s: %v.", t.attempt, conflict))
	case errors.As(err, &notReady):
		out.AddAttributeError(path.Root("partitions"), "New partitions not ready",
			fmt.Sprintf("Topic %s grew from %d to %d partitions, but while waiting for every new partition to have a leader and a "+
				"full ISR the apply gave up: %v.\n\nThe partitions exist (Kafka cannot take them back); check that brokers %s "+
				"are running and in sync, then apply again.", notReady.Topic, notReady.From, notReady.To, notReady.Err, assignmentBrokers(notReady.Added)))
	case !t.unrecorded && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		out.AddAttributeError(t.attribute, t.name+" interrupted",
			fmt.Sprintf("While attempting to %s%s, the apply was interrupted or timed out (timeouts.update): %v.\n\n"+
				"Its progress is saved in the %s topic; the next apply resumes it, or cancels it if the configuration then asks for "+
				"something else. Reassignments already submitted continue in "+
				"Kafka meanwhile.", t.attempt, id, err, kafka.OperationsTopic))
	case t.refused != nil:
		return t.refused(t.attempt+id, err)
	default:
		out.Append(kafkaError(t.attempt+id, err))
	}
	return out
}

// pendingOperation is the one account of an unfinished operation that a
// plan or a refresh shows: which, where it stopped, what is left and why.
func pendingOperation(op *executor.Operation, what string) string {
	at := ""
	if op.Plan != nil && len(op.Plan.Groups) > 0 {
		rest := op.Remaining(op.ThrottleRate)
		at = fmt.Sprintf(" at group %d/%d, with %d moves (%d bytes) left", min(op.Group+1, len(op.Plan.Groups)), len(op.Plan.Groups), rest.Moves, rest.Bytes)
	}
	if op.Paused() {
		return fmt.Sprintf("Operation %s (%s) paused in phase %s%s: the apply reached rebalance.max_apply_duration with nothing in flight. "+
			"The next apply continues it.", op.ID, what, op.Phase, at)
	}
	return fmt.Sprintf("Operation %s (%s) stopped in phase %s%s. It stopped because: %s",
		op.ID, what, op.Phase, at, orNone(op.LastError))
}

// pausedSummary is the warning of an apply that stopped at its
// max_apply_duration: how far the operation got and what happens next.
func pausedSummary(op *executor.Operation, what string) string {
	done := ""
	if op.Plan != nil && len(op.Plan.Groups) > 0 {
		pct := 100.0
		if op.Plan.TotalBytes > 0 {
			pct = 100 * float64(op.BytesDone) / float64(op.Plan.TotalBytes)
		}
		rest := op.Remaining(op.ThrottleRate)
		done = fmt.Sprintf(": %d of %d moves done (%d of %d groups whole), %.0f %% of bytes (%d of %d); %d replica moves left, about %s at %d B/s per broker",
			op.MovesDone, len(op.Plan.Moves()), op.Group, len(op.Plan.Groups), pct, op.BytesDone, op.Plan.TotalBytes, rest.Moves, rest.Duration.Round(time.Second), op.ThrottleRate)
	}
	return fmt.Sprintf("Operation %s (%s) reached rebalance.max_apply_duration and started no new move%s. Nothing of it is in flight "+
		"and its throttles are removed. The state keeps the broker count it started from and sets pending_operation, so the next "+
		"plan shows the change again with what is left; the next apply continues this operation.", op.ID, what, done)
}

func orNone(s string) string {
	if s == "" {
		return "(no error recorded)"
	}
	return s
}
