package executor

import (
	"fmt"
	"slices"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// Preview is what a scaling operation would do, computed before anything
// changes: what `terraform plan` shows.
type Preview struct {
	Plan *engine.Plan
	// AddBrokers are the brokers a scale-out expects the platform to add.
	// Their ids and racks are predictions: the platform decides, and the
	// apply plans again with the brokers that actually registered.
	AddBrokers []engine.Broker
	// RemoveBrokers are the brokers a scale-in drains and removes.
	RemoveBrokers []int32
}

// PreviewScale plans a change of broker count on a snapshot without running
// it. Predicted new brokers take the next free ids, the racks that hold the
// fewest brokers (ties by name), the smallest capacity among the current
// brokers, and the smallest disk use that is not Kafka data among them (a
// fresh volume still carries what every broker's volume carries), so the
// disk check errs on the safe side.
func PreviewScale(c engine.Cluster, target int, remove []int32, opts engine.Options) (*Preview, error) {
	current := len(c.Brokers)
	switch {
	case target < 1:
		return nil, fmt.Errorf("broker count %d: it must be at least 1", target)
	case target == current:
		// Same count: a scaling operation does nothing.
		return &Preview{Plan: &engine.Plan{}}, nil
	case target > current:
		add := predictBrokers(c, target-current)
		plan, err := engine.PlanReassignment(c, engine.Change{AddBrokers: add}, opts)
		if err != nil {
			return nil, err
		}
		return &Preview{Plan: plan, AddBrokers: add}, nil
	default:
		var registered []int32
		for _, b := range c.Brokers {
			registered = append(registered, b.ID)
		}
		leaving, err := chooseLeaving(registered, current-target, remove)
		if err != nil {
			return nil, err
		}
		plan, err := engine.PlanReassignment(c, engine.Change{RemoveBrokers: leaving}, opts)
		if err != nil {
			return nil, err
		}
		return &Preview{Plan: plan, RemoveBrokers: leaving}, nil
	}
}

func predictBrokers(c engine.Cluster, n int) []engine.Broker {
	replicaBytes := map[int32]int64{}
	for _, p := range c.Partitions {
		for _, r := range p.Replicas {
			replicaBytes[r] += p.SizeBytes
		}
	}
	var maxID int32
	perRack := map[string]int{}
	var capacity int64
	other := int64(-1)
	for _, b := range c.Brokers {
		maxID = max(maxID, b.ID)
		perRack[b.Rack]++
		if b.CapacityBytes > 0 && (capacity == 0 || b.CapacityBytes < capacity) {
			capacity = b.CapacityBytes
		}
		if b.CapacityBytes > 0 {
			if o := max(b.UsedBytes-replicaBytes[b.ID], 0); other < 0 || o < other {
				other = o
			}
		}
	}
	other = max(other, 0)
	racks := make([]string, 0, len(perRack))
	for r := range perRack {
		racks = append(racks, r)
	}
	slices.Sort(racks)
	out := make([]engine.Broker, 0, n)
	for i := 0; i < n; i++ {
		best := ""
		for j, r := range racks {
			if j == 0 || perRack[r] < perRack[best] {
				best = r
			}
		}
		perRack[best]++
		b := engine.Broker{ID: maxID + int32(i) + 1, Rack: best, CapacityBytes: capacity, Alive: true}
		if capacity > 0 {
			b.UsedBytes = other
		}
		out = append(out, b)
	}
	return out
}
