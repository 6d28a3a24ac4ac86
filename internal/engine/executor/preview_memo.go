package executor

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// PreviewMemo keeps the last fresh preview of a change of broker count
// made from one read of the cluster. In one run a preview of the change
// and the plan of the change often ask for the same one, from the same
// read: at 933,000 partitions each costs seconds. One entry only, so that
// a run holds at most one plan besides the one in use. The zero value is
// empty and ready.
type PreviewMemo struct {
	mu  sync.Mutex
	key string
	pv  *Preview
	err error
}

// PreviewScale is PreviewScale of the cluster read() returns, computed
// once per read (readID tells reads apart), target, brokers to remove and
// options. The Preview returned is shared: callers must not change it.
func (m *PreviewMemo) PreviewScale(readID uint64, read func() engine.Cluster, target int, remove []int32, o engine.Options) (*Preview, error) {
	opts, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%d/%d/%v/%s", readID, target, remove, opts)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.key == key {
		return m.pv, m.err
	}
	m.key, m.pv, m.err = "", nil, nil // let the previous plan go before computing the next
	pv, err := PreviewScale(read(), target, remove, o)
	m.key, m.pv, m.err = key, pv, err
	return pv, err
}
