package executor_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// sevenOverThreeRacks is the layout: racks a, a, a, b, b, c, c,
// with RF-3 partitions placed one replica per rack.
func sevenOverThreeRacks() engine.Cluster {
	racks := []string{"a", "a", "a", "b", "b", "c", "c"}
	var c engine.Cluster
	for i, r := range racks {
		c.Brokers = append(c.Brokers, engine.Broker{ID: int32(i + 1), Rack: r, Alive: true, CapacityBytes: 1 << 40})
	}
	for p := range 42 {
		c.Partitions = append(c.Partitions, engine.Partition{Topic: "orders", Partition: int32(p), SizeBytes: 10 << 20,
			Replicas: []int32{int32(1 + p%3), int32(4 + p%2), int32(6 + p%2)}})
	}
	return c
}

// Removing one broker of rack b and one of rack c leaves racks 3/1/1: the
// two brokers alone in their racks hold a replica of every partition. The
// plan names them, with the figure, and the default choice that avoids it.
func TestPreviewScaleWarnsOfBrokersAboveOneAndAHalfTheMean(t *testing.T) {
	c := sevenOverThreeRacks()
	opts := engine.DefaultOptions()
	pv, err := executor.PreviewScale(c, 5, []int32{5, 7}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"racks as a: 3, b: 1, c: 1", "broker 4 (rack \"b\") will hold", "broker 6 (rack \"c\") will hold"} {
		if !strings.Contains(pv.Skew, want) {
			t.Errorf("skew note %q does not say %q", pv.Skew, want)
		}
	}
	def, err := executor.PreviewScale(c, 5, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	// 2/2/1 is the most even split five brokers allow: its lone broker
	// still holds a replica of every partition, but fewer bytes than each
	// of the two lone brokers of 3/1/1 hold over their mean.
	if want := fmt.Sprintf("Removing brokers %v instead (the default choice", def.RemoveBrokers); !strings.Contains(pv.Skew, want) {
		t.Errorf("skew note %q does not suggest the default choice: %q", pv.Skew, want)
	}
	if !strings.Contains(pv.Skew, "spreads the racks as a: 1, b: 2, c: 2") {
		t.Errorf("skew note %q does not say the default choice leaves racks 1/2/2", pv.Skew)
	}
	if !strings.Contains(def.Skew, "No choice of 2 leaving broker(s) does better") {
		t.Errorf("the default choice's note %q does not say that no choice does better", def.Skew)
	}
	heavy := engine.HeavyBrokers(pv.Plan, []engine.Broker{c.Brokers[0], c.Brokers[1], c.Brokers[2], c.Brokers[3], c.Brokers[5]}, engine.HeavyFactor)
	for _, h := range heavy {
		if r := float64(h.Bytes) / float64(h.Mean); r < 1.5 {
			t.Errorf("%s: ratio %.2f is not above 1.5", h, r)
		}
	}
	if len(heavy) != 2 {
		t.Errorf("heavy brokers %v, want brokers 4 and 6", heavy)
	}
}
