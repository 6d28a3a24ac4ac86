package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// The plan's one cost line carries the ETA's breakdown: brokers added (at
// the default before a measurement, at the measured time after), the copy
// with its bytes, groups and throttle, the groups' overhead and the finish.
func TestCostLineHasTheETABreakdown(t *testing.T) {
	var c engine.Cluster
	for id := int32(1); id <= 3; id++ {
		c.Brokers = append(c.Brokers, engine.Broker{ID: id, Rack: string('a' + id - 1), Alive: true})
	}
	for p := int32(0); p < 12; p++ {
		c.Partitions = append(c.Partitions, engine.Partition{Topic: "orders", Partition: p,
			Replicas: []int32{p%3 + 1, (p+1)%3 + 1}, SizeBytes: 20 << 20})
	}
	opts := engine.DefaultOptions()
	opts.ThrottleBytesPerSec = 8 << 20
	pv, err := executor.PreviewScale(c, 5, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Plan.ReplicaMoves == 0 {
		t.Fatal("the scale-out moves nothing; the test needs a copy")
	}
	for _, prev := range []*executor.Operation{nil, {Phase: executor.PhaseCompleted, Timings: engine.Timings{Method: "http", BrokerAddSeconds: 42}}} {
		eta := pv.ETA(prev, "http", 0, opts.ThrottleBytesPerSec)
		line := planCost{Cost: executor.Cost{Moves: pv.Plan.ReplicaMoves, Bytes: pv.Plan.TotalBytes, ETA: eta}}.line(5)
		adding := eta.Adding.Round(1e9).String() + " adding 2 broker(s)"
		hint := "Set scaling.broker_start_time"
		if prev == nil {
			adding += " (unknown until this scaling method has added a broker: counted at the default of 3s each)"
			if !strings.Contains(line, hint) {
				t.Errorf("the first scale-out's cost line %q does not point at scaling.broker_start_time", line)
			}
		} else if strings.Contains(line, hint) {
			t.Errorf("with a measured add time the cost line %q still asks for scaling.broker_start_time", line)
		}
		if prev != nil && eta.Adding != 2*42e9 {
			t.Errorf("measured add time: %s for 2 brokers, want 2 × 42s", eta.Adding)
		}
		for _, want := range []string{
			"Scaling to 5 brokers moves ",
			", ~" + eta.Total().Round(1e9).String() + ": ",
			adding,
			eta.Copying.Round(1e9).String() + " copying " + engine.HumanBytes(pv.Plan.TotalBytes),
			"at 8 MiB/s per broker",
			"starting and settling the groups",
			"verifying and electing leaders",
		} {
			if !strings.Contains(line, want) {
				t.Errorf("cost line %q does not contain %q", line, want)
			}
		}
	}
}

// Moving a tiered topic, the cost line says the bytes are copied ones and
// how much of the moved partitions stays in remote storage; without
// tiered storage it says the bytes alone, as before.
func TestCostLineSaysWhatStaysInRemoteStorage(t *testing.T) {
	c := engine.Cluster{}
	for id := int32(1); id <= 3; id++ {
		c.Brokers = append(c.Brokers, engine.Broker{ID: id, Alive: true})
	}
	for p := int32(0); p < 12; p++ {
		c.Partitions = append(c.Partitions, engine.Partition{Topic: "clicks", Partition: p,
			Replicas: []int32{p%3 + 1, (p+1)%3 + 1}, SizeBytes: 20 << 20, CopyBytes: 2 << 20, RemoteBytes: 180 << 20})
	}
	pv, err := executor.PreviewScale(c, 4, nil, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	moving := len(pv.Plan.MovingPartitions())
	if moving == 0 || pv.Plan.TotalBytes != int64(pv.Plan.ReplicaMoves)*2<<20 || pv.Plan.RemoteBytes != int64(moving)*180<<20 {
		t.Fatalf("plan copies %d bytes in %d moves of %d partitions, %d bytes remote: want 2 MiB a move, 180 MiB a partition",
			pv.Plan.TotalBytes, pv.Plan.ReplicaMoves, moving, pv.Plan.RemoteBytes)
	}
	cost := executor.Cost{Moves: pv.Plan.ReplicaMoves, Bytes: pv.Plan.TotalBytes, RemoteBytes: pv.Plan.RemoteBytes}
	line := planCost{Cost: cost}.line(4)
	want := fmt.Sprintf("(%d bytes copied; %s of the tiered topics' partitions moved stay in remote storage and are not copied)",
		pv.Plan.TotalBytes, engine.HumanBytes(pv.Plan.RemoteBytes))
	if !strings.Contains(line, want) {
		t.Errorf("cost line %q does not contain %q", line, want)
	}
	cost.RemoteBytes = 0
	if line := (planCost{Cost: cost}).line(4); strings.Contains(line, "remote storage") || !strings.Contains(line, fmt.Sprintf("(%d bytes)", cost.Bytes)) {
		t.Errorf("cost line without tiered topics %q", line)
	}
}
