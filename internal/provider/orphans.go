package provider

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// orphanCache keeps what one read of the operations topic found, so that a
// plan or an apply of many resources reads it once, not once per resource.
type orphanCache struct {
	mu      sync.Mutex
	checked bool
	found   []executor.OrphanedThrottle
}

func (d *providerData) orphanExecutor() *executor.Executor {
	return d.executor(executor.Settings{}, nil, nil)
}

// orphanedThrottles lists the throttles finished or paused operations left, once per
// provider process. A read that fails is logged, not shown: a principal
// that may not read the operations topic still plans its topics.
func (d *providerData) orphanedThrottles(ctx context.Context) []executor.OrphanedThrottle {
	d.orphans.mu.Lock()
	defer d.orphans.mu.Unlock()
	if !d.orphans.checked {
		found, err := d.orphanExecutor().FindOrphanedThrottles(ctx)
		if err != nil {
			tflog.Warn(ctx, "could not look for replication throttles left by finished or paused operations", map[string]any{
				"topic": kafka.OperationsTopic, "error": err.Error()})
			return nil
		}
		d.orphans.checked, d.orphans.found = true, found
	}
	return d.orphans.found
}

// warnOrphanedThrottles tells a plan that its apply removes the throttles
// finished or paused operations left behind.
func (d *providerData) warnOrphanedThrottles(ctx context.Context, diags *diag.Diagnostics) {
	found := d.orphanedThrottles(ctx)
	if len(found) == 0 {
		return
	}
	diags.AddWarning("The apply removes replication throttles left behind",
		fmt.Sprintf("kafkascale set these replication throttles for operations that are over, or paused (a paused operation "+
			"holds no throttle until its next run; a broker that was down when it paused kept its rate), and nothing else "+
			"would remove them: %s. A throttle left on caps replication, and slows a partition catching up after a broker failure. The "+
			"apply removes them; a broker rate is kept where its value is no longer the one kafkascale set, and throttles "+
			"set by others are never touched.", describeOrphans(found)))
}

// applyExecutor is the executor of an apply's operation. When this
// process found throttles that finished or paused operations left (one
// read per process, shared with the plans), the operation removes them as
// its last step; reportLeftThrottles then says what it did.
func (d *providerData) applyExecutor(ctx context.Context, s executor.Settings, scaler executor.Scaler, advisor executor.RateAdvisor) *executor.Executor {
	s.ClearLeftThrottles = len(d.orphanedThrottles(ctx)) > 0
	return d.executor(s, scaler, advisor)
}

// reportLeftThrottles logs what ex's operation removed of the throttles
// left behind, and warns when it could not: the operation itself is done,
// and the next apply tries again.
func (d *providerData) reportLeftThrottles(ctx context.Context, ex *executor.Executor, diags *diag.Diagnostics) {
	removed, err := ex.LeftThrottles()
	if err != nil {
		diags.AddWarning("Replication throttles left behind were not removed",
			fmt.Sprintf("While removing the replication throttles that finished or paused operations left: %v. The next apply tries again.", err))
		return
	}
	if len(removed) == 0 {
		return
	}
	d.orphans.mu.Lock()
	d.orphans.found = nil
	d.orphans.mu.Unlock()
	tflog.Info(ctx, "removed replication throttles left by finished or paused operations", map[string]any{"throttles": describeOrphans(removed)})
}

func describeOrphans(os []executor.OrphanedThrottle) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = o.String()
	}
	return strings.Join(parts, "; ")
}
