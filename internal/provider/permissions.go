package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// What each change needs, in Kafka's ACL words. The apply checks these
// before it changes anything, so that a principal short of one permission
// fails with its name instead of halfway through.

// topicChange describes one apply of kafkascale_topic.
type topicChange struct {
	name                                             string
	create, grow, replicationFactor, config, destroy bool
}

func (c topicChange) permissions() []kafka.Permission {
	t := func(op, why string) kafka.Permission {
		return kafka.Permission{Kind: kafka.ResourceTopic, Name: c.name, Operation: op, Why: why}
	}
	var need []kafka.Permission
	if c.create {
		need = append(need, t("CREATE", "to create the topic"))
	}
	if c.config {
		need = append(need, t("ALTER_CONFIGS", "to change its configs"))
	}
	if c.grow {
		need = append(need, t("ALTER", "to add partitions"))
		need = append(need, leasePermissions()...)
	}
	if c.replicationFactor {
		need = append(need, t("ALTER_CONFIGS", "to set the replication throttle on its moving replicas"))
		need = append(need, reassignmentPermissions()...)
	}
	if c.destroy {
		need = append(need, t("DELETE", "to delete the topic"))
	}
	return need
}

// attribute is where a missing permission's diagnostic goes: the attribute
// that drives the change.
func (c topicChange) attribute(p kafka.Permission) path.Path {
	switch {
	case p.Kind == kafka.ResourceTopic && p.Name == c.name && p.Operation == "CREATE":
		return path.Root("name")
	case p.Kind == kafka.ResourceTopic && p.Name == c.name && p.Operation == "ALTER":
		return path.Root("partitions")
	case p.Kind == kafka.ResourceTopic && p.Name == c.name && p.Operation == "ALTER_CONFIGS" && c.config:
		return path.Root("config")
	case c.replicationFactor:
		return path.Root("replication_factor")
	}
	return path.Empty()
}

// reassignmentPermissions are what a throttled reassignment needs beyond
// the moving topics: submitting it and electing leaders (ALTER on the
// cluster), the brokers' throttle rates (ALTER_CONFIGS on the cluster),
// and the operation log that makes it resumable.
func reassignmentPermissions() []kafka.Permission {
	ops := func(op, why string) kafka.Permission {
		return kafka.Permission{Kind: kafka.ResourceTopic, Name: kafka.OperationsTopic, Operation: op, Why: why}
	}
	return append([]kafka.Permission{
		{Kind: kafka.ResourceCluster, Operation: "ALTER", Why: "to reassign partitions and elect preferred leaders"},
		{Kind: kafka.ResourceCluster, Operation: "ALTER_CONFIGS", Why: "to set replication throttles on brokers"},
		{Kind: kafka.ResourceCluster, Operation: "DESCRIBE", Why: "to follow the reassignment"},
		ops("CREATE", "to create the operation log"),
		ops("WRITE", "to record the operation's progress"),
		ops("READ", "to resume an interrupted operation"),
	}, leasePermissions()...)
}

// leasePermissions are what holding the cluster's operation lease needs.
func leasePermissions() []kafka.Permission {
	l := func(op, why string) kafka.Permission {
		return kafka.Permission{Kind: kafka.ResourceTopic, Name: kafka.LeaseTopic, Operation: op, Why: why}
	}
	return []kafka.Permission{
		l("CREATE", "to create the operation lease"),
		l("WRITE", "to claim the operation lease"),
		l("READ", "to see who holds the operation lease"),
	}
}

// scalePermissions are what a change of broker count needs: a
// reassignment that may move a replica of any topic.
func scalePermissions() []kafka.Permission {
	return append(reassignmentPermissions(),
		kafka.Permission{Kind: kafka.ResourceTopic, Name: kafka.AllTopics, Operation: "ALTER_CONFIGS", Why: "to set the replication throttle on its moving replicas"})
}

// checkPermissions runs the check before an apply changes anything. A
// missing permission is an error on attr; so is a failed check, since the
// apply would fail the same way.
func checkPermissions(ctx context.Context, kc *kafka.Client, need []kafka.Permission, attempt string, attr func(kafka.Permission) path.Path, diags *diagList) bool {
	err := kc.CheckPermissions(ctx, need)
	if err == nil {
		return true
	}
	var missing *kafka.MissingPermissionsError
	if !errors.As(err, &missing) {
		diags.Append(kafkaError("check the permissions to "+attempt, err))
		return false
	}
	summary, detail := missingPermissionsText(attempt, missing)
	if p := attr(missing.Missing[0]); !p.Equal(path.Empty()) {
		diags.AddAttributeError(p, summary, detail)
	} else {
		diags.AddError(summary, detail)
	}
	return false
}

// warnPermissions is the plan-time twin: a plan only reads, so a principal
// that cannot apply may still plan; it is told what the apply will need.
// It returns false when something is missing, so that the caller skips
// the validations Kafka would refuse for the same reason.
func warnPermissions(ctx context.Context, kc *kafka.Client, need []kafka.Permission, attempt string, attr func(kafka.Permission) path.Path, diags *diagList) bool {
	err := kc.CheckPermissions(ctx, need)
	var missing *kafka.MissingPermissionsError
	if !errors.As(err, &missing) {
		return true // nil, or a failure the validations will report
	}
	summary, detail := missingPermissionsText(attempt, missing)
	detail = "The plan is shown, but the apply will stop before changing anything.\n\n" + detail
	if p := attr(missing.Missing[0]); !p.Equal(path.Empty()) {
		diags.AddAttributeWarning(p, summary, detail)
	} else {
		diags.AddWarning(summary, detail)
	}
	return false
}

func missingPermissionsText(attempt string, err *kafka.MissingPermissionsError) (string, string) {
	return "Missing Kafka permissions", fmt.Sprintf("Before attempting to %s, kafkascale asked Kafka which operations this "+
		"principal may perform; nothing was changed. %v.\n\n"+
		"Grant the missing ACLs (kafka-acls.sh --add --allow-principal ... --operation ...), or use a principal that has them; "+
		"see the provider's security guide for what each resource needs.", attempt, err)
}
