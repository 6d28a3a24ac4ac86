package executor

import (
	"context"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// GrowthReader is the optional part of the Kafka port that measures how
// fast producers write to partitions (bytes/s over the last window): a
// new replica copies what is written during its copy too, and the ETA
// counts that catch-up. A port without it estimates the copy alone.
type GrowthReader interface {
	RecentGrowth(ctx context.Context, parts []engine.PartitionSize, window time.Duration) (map[string]map[int32]float64, error)
}

// MaxGrowthPartitions is the most moving partitions whose growth is read:
// the offsets are listed per topic, so a plan that moves hundreds of
// thousands of partitions would list every partition of the cluster three
// times, for a plan that runs for days and whose catch-up is small against
// its copy. Such a plan is estimated without the catch-up.
const MaxGrowthPartitions = 20000

// MeasureGrowth sets the recent write rate of every partition p moves
// (engine.Plan.SetGrowth), when k can measure it. The executor calls it
// when it records a plan, so the operation's ETA, its progress lines and
// kafkascale watch count the catch-up; a plan preview calls it to say
// what the catch-up adds.
func MeasureGrowth(ctx context.Context, k Kafka, p *engine.Plan) error {
	g, ok := k.(GrowthReader)
	if !ok || p == nil {
		return nil
	}
	parts := p.MovingPartitions()
	if len(parts) > MaxGrowthPartitions {
		return nil
	}
	rates, err := g.RecentGrowth(ctx, parts, engine.GrowthWindow)
	if err != nil {
		return err
	}
	p.SetGrowth(rates)
	return nil
}

// estimate measures the growth of what op's plan moves and sets the plan's
// EstimatedSeconds from what op has left. A growth that cannot be read
// costs the estimate its catch-up, never the operation: it is logged.
func (e *Executor) estimate(ctx context.Context, op *Operation) {
	if err := MeasureGrowth(ctx, e.d.Kafka, op.Plan); err != nil {
		e.d.Log.Warn(ctx, "could not read the moving partitions' recent writes; the ETA leaves out the catch-up",
			map[string]any{"operation": op.ID, "error": err.Error()})
	}
	op.Plan.EstimatedSeconds = op.Remaining(op.ThrottleRate).ETA.Seconds()
}
