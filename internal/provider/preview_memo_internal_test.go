package provider

import (
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// One read, one target, one set of options: one plan, however many ask.
// Another read, target or option plans again.
func TestPreviewScaleShared(t *testing.T) {
	live := kafka.Snapshot{ClusterID: "c", ReadID: 7}
	for b := int32(1); b <= 3; b++ {
		live.Brokers = append(live.Brokers, kafka.BrokerState{ID: b, Rack: "r"})
	}
	for p := int32(0); p < 12; p++ {
		live.Partitions = append(live.Partitions, kafka.PartitionState{Topic: "t", Partition: p, Replicas: []int32{p%3 + 1, (p+1)%3 + 1}, SizeBytes: 1000})
	}
	d := &providerData{}
	o := engine.DefaultOptions()
	first, err := d.previewScale(live, 4, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := d.previewScale(live, 4, nil, o); again != first {
		t.Error("the same read, target and options planned twice")
	}
	if first.Plan.ReplicaMoves != 6 {
		t.Errorf("%d moves to 4 brokers, want 6", first.Plan.ReplicaMoves)
	}
	other := o
	other.MaxMovesPerStep = 1
	for name, call := range map[string]func() (any, error){
		"another read":   func() (any, error) { l := live; l.ReadID = 8; return d.previewScale(l, 4, nil, o) },
		"another target": func() (any, error) { return d.previewScale(live, 5, nil, o) },
		"other options":  func() (any, error) { return d.previewScale(live, 4, nil, other) },
	} {
		pv, err := call()
		if err != nil {
			t.Fatal(err)
		}
		if pv == any(first) {
			t.Errorf("%s reused the plan", name)
		}
	}
}
