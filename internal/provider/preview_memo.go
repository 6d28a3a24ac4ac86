package provider

import (
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// previewScale is executor.PreviewScale of live, computed once per read,
// target, brokers to remove and options (executor.PreviewMemo): the data
// source kafkascale_rebalance_plan and the plan of kafkascale_cluster
// often ask for the same one. The Preview returned is shared: callers must
// not change it.
func (d *providerData) previewScale(live kafka.Snapshot, target int, remove []int32, o engine.Options) (*executor.Preview, error) {
	return d.previews.PreviewScale(live.ReadID, func() engine.Cluster { return kafka.EngineCluster(live) }, target, remove, o)
}
