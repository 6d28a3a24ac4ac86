package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// planningSnapshotKey holds, in the resource's private state, the cluster as
// the last refresh saw it (executor.EncodePlanningSnapshot). From the whole
// snapshot the plan computes its cost, so that `plan` and the plan
// Terraform repeats inside `apply` agree to the byte. A cluster too large
// for it keeps only its summary: the plan then reads the live cluster and
// leaves planned_moves, planned_bytes, estimated_duration and
// leaving_brokers unknown, known after apply, never a figure the apply
// could contradict. An old state's whole snapshot of a large cluster is
// read as before and replaced at the next refresh.
const planningSnapshotKey = "planning_snapshot"

type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

// savePlanningSnapshot keeps c, or its summary when c is too large, in
// private state. balance, when set, are the options the resource keeps the
// cluster balanced with: a summary records OutOfBalance's answer for them.
func savePlanningSnapshot(ctx context.Context, p privateSetter, c engine.Cluster, balance *engine.Options) diag.Diagnostics {
	v, err := executor.EncodePlanningSnapshot(c, balance)
	if err != nil {
		return diag.Diagnostics{diag.NewErrorDiagnostic("Could not keep the planning snapshot",
			"While saving the cluster the last refresh saw into the private state: "+err.Error()+". "+bugReport)}
	}
	return p.SetKey(ctx, planningSnapshotKey, v)
}

// loadPlanningSnapshot reads what the last refresh kept. Anything
// unreadable counts as nothing kept: the next refresh replaces it.
func loadPlanningSnapshot(ctx context.Context, p privateGetter) (executor.PlanningView, diag.Diagnostics) {
	if p == nil {
		return executor.PlanningView{}, nil
	}
	raw, diags := p.GetKey(ctx, planningSnapshotKey)
	if diags.HasError() || len(raw) == 0 {
		return executor.PlanningView{}, diags
	}
	return executor.DecodePlanningSnapshot(raw), diags
}
