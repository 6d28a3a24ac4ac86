package provider

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// previewMemo keeps the last fresh preview of a change of broker count
// made from a live read of the cluster. In one Terraform run the data
// source kafkascale_rebalance_plan and the plan of kafkascale_cluster often
// ask for the same one, from the same shared read (Client.RecentSnapshot):
// at 933,000 partitions each costs seconds. One entry only, so that a run
// holds at most one plan besides the one in use.
type previewMemo struct {
	mu  sync.Mutex
	key string
	pv  *executor.Preview
	err error
}

// previewScale is executor.PreviewScale of live, computed once per read,
// target, brokers to remove and options. The Preview returned is shared:
// callers must not change it.
func (d *providerData) previewScale(live kafka.Snapshot, target int, remove []int32, o engine.Options) (*executor.Preview, error) {
	opts, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%d/%d/%v/%s", live.ReadID, target, remove, opts)
	m := &d.previews
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.key == key {
		return m.pv, m.err
	}
	m.key, m.pv, m.err = "", nil, nil // let the previous plan go before computing the next
	pv, err := executor.PreviewScale(kafka.EngineCluster(live), target, remove, o)
	m.key, m.pv, m.err = key, pv, err
	return pv, err
}
