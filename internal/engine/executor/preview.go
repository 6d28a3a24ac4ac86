package executor

import (
	"fmt"
	"slices"
	"strings"
	"time"

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
	// RemoveBrokers are the brokers a scale-in or a replacement drains and
	// removes.
	RemoveBrokers []int32
	// Replace is true when new brokers take the place of RemoveBrokers.
	Replace bool
	// Healing says which leaving brokers are dead and what the change heals
	// (engine.Leaving.HealingNote); empty when none is.
	Healing string
	// Resumes is the unfinished operation the apply resumes, when it heads
	// for the same target: then Plan is nil and Resumes.Remaining is the
	// cost.
	Resumes *Operation
	// Skew names the brokers that will hold more than engine.HeavyFactor
	// times the mean bytes because of the failure domains left, and what
	// choice avoids it; empty when none will.
	Skew string
	// Imbalance says what is out of balance when a cluster kept balanced
	// at its count is rebalanced in place (PreviewRebalance); empty when
	// nothing is.
	Imbalance string
	// Cancels is what the apply cancels first, when an unfinished
	// operation heads elsewhere; Plan is then made from the cluster the
	// cancel leaves.
	Cancels *Cancellation
	// PendingUpload says which moved partitions' new replicas cannot start
	// until a record is written to them (engine.PendingUploadUnknownMoves)
	// and what to do; empty when none.
	PendingUpload string
}

// PreviewScaleFrom is what Scale would do now with prev, the operation
// stored under the same key (nil when none): resume it, cancel it and plan
// anew, or just plan. It is the one preview the plan shows, so that the
// plan and the apply take the same branch.
//
// balance is what is rebalanced in place when the count stays and no
// broker is named (PreviewRebalance).
func PreviewScaleFrom(c engine.Cluster, prev *Operation, target int, remove []int32, balance Balance, opts engine.Options) (*Preview, error) {
	// owes: the cluster is to be rebalanced in place when it is out of
	// balance even where the resource keeps nothing balanced, because an
	// operation stopped short of its layout (OwesBalance; a revert
	// cancels one here).
	fresh := func(c engine.Cluster, remove []int32, owes bool) (*Preview, error) {
		if b, ok := inPlace(balance, owes); ok && target == len(c.Brokers) && len(remove) == 0 {
			return PreviewRebalance(c, opts, b)
		}
		return PreviewScale(c, target, remove, balance.options(opts))
	}
	if prev == nil || prev.Done() {
		return fresh(c, leavingAfterAbandon(prev, ids(c.Brokers), target, remove), prev.OwesBalance())
	}
	var died []int32
	if headsForCount(prev, target, remove) {
		died = diedLeaving(prev, func(id int32) bool {
			return slices.ContainsFunc(c.Brokers, func(b engine.Broker) bool { return b.ID == id && b.Alive })
		})
		if len(died) == 0 {
			return &Preview{Resumes: prev, RemoveBrokers: prev.RemoveBrokers}, nil
		}
	}
	cn, after := PreviewCancel(c, prev, nil)
	cn.DiedLeaving = died
	pv, err := fresh(after, leavingAfterCancel(&cn, len(after.Brokers), target, remove), true)
	if err != nil {
		return nil, err
	}
	pv.Cancels = &cn
	return pv, nil
}

// PreviewScale plans a change of broker count on a snapshot without running
// it. Predicted new brokers take the next free ids, the racks that hold the
// fewest brokers (ties by name), the smallest capacity among the current
// brokers, and the smallest disk use that is not Kafka data among them (a
// fresh volume still carries what every broker's volume carries), so the
// disk check errs on the safe side.
//
// remove are the brokers the user named to leave (none: the engine's
// default choice, engine.ChooseLeaving). With target equal to the current
// count they name brokers to replace: new brokers are predicted in their
// racks, and the plan moves the leaving brokers' replicas onto them.
func PreviewScale(c engine.Cluster, target int, remove []int32, opts engine.Options) (*Preview, error) {
	if target < 1 {
		return nil, fmt.Errorf("broker count %d: it must be at least 1", target)
	}
	leaving, err := engine.ChooseLeaving(c, target, remove, opts)
	if err != nil {
		return nil, err
	}
	current := len(c.Brokers)
	var add []engine.Broker
	switch {
	case target > current:
		add = predictBrokers(c, target-current, nil)
	case leaving.Replace:
		add = predictBrokers(c, len(leaving.Brokers), leaving.Brokers)
	case target == current:
		// Same count, nothing named: a scaling operation does nothing.
		return &Preview{Plan: &engine.Plan{}}, nil
	}
	plan, err := engine.PlanReassignment(c, engine.Change{AddBrokers: add, RemoveBrokers: leaving.Brokers}, opts)
	if err != nil {
		return nil, err
	}
	pv := &Preview{Plan: plan, AddBrokers: add, RemoveBrokers: leaving.Brokers, Replace: leaving.Replace, Healing: leaving.HealingNote()}
	staying := append(slices.DeleteFunc(slices.Clone(c.Brokers), func(b engine.Broker) bool { return slices.Contains(leaving.Brokers, b.ID) }), add...)
	if heavy := engine.HeavyBrokers(plan, staying, engine.HeavyFactor); len(heavy) > 0 {
		pv.Skew = skewNote(c, target, remove, leaving.Brokers, staying, heavy, opts)
	}
	pv.PendingUpload = pendingUploadNote(engine.PendingUploadUnknownMoves(c, plan))
	return pv, nil
}

// pendingUploadNote says what a plan that moves idle tiered partitions
// under KIP-1023 meets on Kafka 4.4, and the two ways out; empty for none.
func pendingUploadNote(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	named := parts
	if len(named) > 5 {
		named = append(slices.Clone(parts[:5]), fmt.Sprintf("and %d more", len(parts)-5))
	}
	return fmt.Sprintf("This plan gives a new replica to %d partition(s) of tiered topics (%s) with every segment in remote storage "+
		"and nothing pending upload: nothing was written to them for longer than their local retention. With "+
		"follower.fetch.last.tiered.offset.enable (KIP-1023) on, their leaders have no earliest pending upload offset to "+
		"give a new follower, and Kafka 4.4 starts none until a record is written to the partition; the apply would wait "+
		"for them until its timeout. Before applying, write to those partitions, or set "+
		"follower.fetch.last.tiered.offset.enable=false on the brokers until the apply is done: their local logs are empty, so "+
		"their new replicas copy nothing either way, and the next plan counts what the other tiered partitions' new "+
		"replicas then copy.", len(parts), strings.Join(named, ", "))
}

// skewNote says which brokers will hold more than HeavyFactor times the
// mean because of the failure domains left, and what choice avoids it: the
// default choice when the user named other brokers and it does, and
// otherwise that the count forces it.
func skewNote(c engine.Cluster, target int, named, leaving []int32, staying []engine.Broker, heavy []engine.HeavyBroker, opts engine.Options) string {
	lines := make([]string, len(heavy))
	for i, h := range heavy {
		lines[i] = h.String()
	}
	note := fmt.Sprintf("Once brokers %v leave, the brokers that stay are spread over racks as %s, so %s.",
		leaving, engine.RackCounts(staying), strings.Join(lines, "; "))
	if len(named) > 0 {
		if def, err := PreviewScale(c, target, nil, opts); err == nil && !slices.Equal(def.RemoveBrokers, leaving) {
			defStaying := append(slices.DeleteFunc(slices.Clone(c.Brokers), func(b engine.Broker) bool { return slices.Contains(def.RemoveBrokers, b.ID) }), def.AddBrokers...)
			// Better is fewer brokers above the factor, then a lighter
			// heaviest one.
			shares := engine.Shares(def.Plan, defStaying)
			defHeavy := engine.HeavyBrokers(def.Plan, defStaying, engine.HeavyFactor)
			if len(shares) > 0 && (len(defHeavy) < len(heavy) || len(defHeavy) == len(heavy) && shares[0].Ratio() < heavy[0].Ratio()) {
				return note + fmt.Sprintf(" Removing brokers %v instead (the default choice: leave remove_broker_ids unset) spreads "+
					"the racks as %s, where %d broker(s) are above %.1f× the mean and the heaviest, %s.", def.RemoveBrokers,
					engine.RackCounts(defStaying), len(defHeavy), engine.HeavyFactor, shares[0])
			}
		}
	}
	return note + fmt.Sprintf(" No choice of %d leaving broker(s) does better with these racks: choose a broker count that leaves "+
		"the racks even, or add brokers to the racks with fewest.", len(leaving))
}

// predictBrokers predicts n new brokers. A replacement's new brokers are
// predicted in the racks of the brokers they replace (replacing, in order).
func predictBrokers(c engine.Cluster, n int, replacing []int32) []engine.Broker {
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
	rackOf := map[int32]string{}
	for _, b := range c.Brokers {
		rackOf[b.ID] = b.Rack
	}
	for i := 0; i < n; i++ {
		best := ""
		for j, r := range racks {
			if j == 0 || perRack[r] < perRack[best] {
				best = r
			}
		}
		if i < len(replacing) {
			best = rackOf[replacing[i]]
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

// ETA estimates the apply the preview shows: the rest of the operation it
// resumes, or its plan with the brokers it adds and removes. prev is the
// last operation under the same key, whose timings are the measurement;
// method is the scaling method the apply uses, declaredAdd the time per
// broker it says its platform takes to add one (zero: it says nothing),
// and throttle the initial rate. The executor runs with
// engine.DefaultPollInterval unless told otherwise, and the estimate
// counts its waits with it.
func (pv *Preview) ETA(prev *Operation, method string, declaredAdd time.Duration, throttle int64) engine.ETA {
	if pv.Resumes != nil {
		return pv.Resumes.Remaining(pv.Resumes.ThrottleRate).ETA
	}
	if pv.Plan == nil {
		return engine.ETA{}
	}
	return pv.Plan.ETA(engine.ETAInputs{Throttle: throttle, AddBrokers: len(pv.AddBrokers), RemoveBrokers: len(pv.RemoveBrokers),
		Measured: carriedTimings(prev), Method: method, DeclaredAddTime: declaredAdd})
}
