//go:build linux

package main

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// The faults a step may carry. A step without one is faultNone.
const (
	faultNone           = "-"
	faultSIGKILL        = "sigkill"         // terraform and the provider, mid-apply
	faultTimeout        = "timeout"         // timeouts.update far shorter than the apply
	faultRevert         = "sigkill+revert"  // the old configuration applied right after the kill
	faultTimeoutRevert  = "timeout+revert"  // the old configuration applied right after the timeout
	faultConcurrent     = "concurrent"      // the other working directory applies at once
	faultBrokerKill     = "broker-kill"     // a broker SIGKILLed mid-apply, left dead
	faultControllerKill = "controller-kill" // the quorum leader SIGKILLed mid-apply
	faultAPIFail        = "api-fail"        // the scaling API answers 503 for a while
)

// step is one drawn step: a change to one working directory's
// configuration, applied with terraform apply, and maybe a fault.
type step struct {
	n      int
	dir    string // "A", "B", or "-" for a step on the cluster alone
	action string
	change func(*desired)
	// scaling says the change goes through the scaling API (a new count
	// or a replacement).
	scaling bool
	// balances says a success promises replicas even per rack: a new
	// broker count, which the planner lays out whole. A replacement only
	// moves the named brokers' replicas, and a topic change places only
	// its own.
	balances bool

	fault string
	delay time.Duration // from the apply's start to the fault
	// other is the change the other working directory applies at once,
	// for faultConcurrent.
	other *step
	// restart is the dead broker a cluster-only step starts again.
	restart int32
	// victim picks the broker a broker-kill fault kills, among the running
	// ones by id.
	victim int
	// outage is how long the scaling API fails, for faultAPIFail.
	outage time.Duration
}

// drawStep draws step n from the soak's seeded source and its model of
// the configuration and of the dead brokers, never from what the cluster
// answered, so that a seed replays the same steps.
func (s *soak) drawStep(n int) *step {
	if len(s.dead) > 0 {
		return s.drawHeal(n)
	}
	var st *step
	if s.rng.IntN(5) < 3 {
		st = s.drawClusterChange(n)
	} else {
		st = s.drawTopicChange(n, "B")
	}
	if s.rng.IntN(100) < s.faultPercent {
		s.drawFault(st)
	} else {
		st.fault = faultNone
	}
	return st
}

// drawHeal brings a dead broker back: started again on its disk, or
// replaced through remove_broker_ids at the same count.
func (s *soak) drawHeal(n int) *step {
	dead := s.dead[0]
	// A replacement names the dead broker, so, as any step that names
	// brokers, it waits until A's last apply left the cluster at its
	// declared count: after a paused or failed change, remove_broker_ids
	// = [9] at that count asked for the wrong number of leavers (seed 22,
	// step 31: "going from 7 to 4 brokers removes 3; name 3").
	if s.rng.IntN(2) == 0 || !s.settled["A"] {
		return &step{n: n, dir: "-", action: fmt.Sprintf("restart broker %d", dead), restart: dead, fault: faultNone}
	}
	return &step{n: n, dir: "A", action: fmt.Sprintf("replace dead broker %d", dead), fault: faultNone, scaling: true,
		change: func(d *desired) { d.Cluster.RemoveBrokerIDs = []int32{dead} }}
}

func (s *soak) drawClusterChange(n int) *step {
	cur := s.want.Cluster.Brokers
	st := &step{n: n, dir: "A", scaling: true}
	// Brokers are named only when A's last apply left the cluster at its
	// declared count: remove_broker_ids must name exactly the brokers the
	// count drops, counted from the brokers registered.
	switch k := s.rng.IntN(10); {
	case k < 4: // a new count, the removed brokers the provider's choice
		to := s.otherCount(cur)
		st.action, st.balances = fmt.Sprintf("brokers %d -> %d", cur, to), true
		st.change = func(d *desired) { d.Cluster.Brokers, d.Cluster.RemoveBrokerIDs = to, nil }
	case k < 6 && cur > 4 && s.settled["A"]: // a scale-in of named brokers
		drop := 1 + s.rng.IntN(min(2, cur-4))
		ids := s.pickBrokers(drop)
		st.action, st.balances = fmt.Sprintf("brokers %d -> %d remove %v", cur, cur-drop, ids), true
		st.change = func(d *desired) { d.Cluster.Brokers, d.Cluster.RemoveBrokerIDs = cur-drop, ids }
	case k < 7 && s.settled["A"]: // a replacement of a live broker
		ids := s.pickBrokers(1)
		st.action = fmt.Sprintf("replace broker %v", ids)
		st.change = func(d *desired) { d.Cluster.RemoveBrokerIDs = ids }
	case k < 8 && s.rng.IntN(2) == 0:
		on := !s.want.Cluster.KeepBalanced
		st.action, st.scaling = fmt.Sprintf("keep_balanced = %t", on), false
		st.change = func(d *desired) { d.Cluster.KeepBalanced = on }
	case k < 8: // a broker demoted, or the demotion lifted
		var ids []int32
		if len(s.want.Cluster.DemoteBrokerIDs) == 0 {
			ids = s.pickBrokers(1)
		}
		st.action, st.scaling = fmt.Sprintf("demote_broker_ids = %v", ids), false
		st.change = func(d *desired) { d.Cluster.DemoteBrokerIDs = ids }
	default: // a run limit, with a new count for it to cut short
		to, mad := s.otherCount(cur), ""
		if s.want.Cluster.MaxApplyDuration == "" {
			mad = "2s"
		}
		st.action, st.balances = fmt.Sprintf("brokers %d -> %d max_apply_duration=%q", cur, to, mad), true
		st.change = func(d *desired) {
			d.Cluster.Brokers, d.Cluster.RemoveBrokerIDs, d.Cluster.MaxApplyDuration = to, nil, mad
		}
	}
	return st
}

// otherCount draws a broker count in 4..7 other than cur.
func (s *soak) otherCount(cur int) int {
	to := 4 + s.rng.IntN(3)
	if to >= cur {
		to++
	}
	return to
}

// pickBrokers draws k of the brokers the model believes registered, by
// id, without repeats.
func (s *soak) pickBrokers(k int) []int32 {
	ids := slices.Clone(s.brokerIDs)
	var out []int32
	for range k {
		i := s.rng.IntN(len(ids))
		out = append(out, ids[i])
		ids = slices.Delete(ids, i, i+1)
	}
	slices.Sort(out)
	return out
}

func (s *soak) drawTopicChange(n int, dir string) *step {
	st := &step{n: n, dir: dir}
	if cur := s.want.StreamsPartitions; cur < streamsMaxPartions && s.rng.IntN(4) == 0 {
		to := min(cur+1+int32(s.rng.IntN(2)), streamsMaxPartions)
		st.action = fmt.Sprintf("streams app partitions %d -> %d", cur, to)
		st.change = func(d *desired) { d.StreamsPartitions = to }
		return st
	}
	names := slices.Sorted(maps.Keys(s.want.Topics))
	name := names[s.rng.IntN(len(names))]
	t := s.want.Topics[name]
	switch k := s.rng.IntN(3); {
	case t.Destroyable && (k == 0 || !t.Present):
		present := !t.Present
		st.action = map[bool]string{true: "create topic ", false: "destroy topic "}[present] + name
		st.change = func(d *desired) {
			t := d.Topics[name]
			t.Present = present
			d.Topics[name] = t
		}
	case k == 1:
		grow := 1 + s.rng.IntN(3)
		st.action = fmt.Sprintf("%s partitions %d -> %d", name, t.Partitions, t.Partitions+grow)
		st.change = func(d *desired) {
			t := d.Topics[name]
			t.Partitions += grow
			d.Topics[name] = t
		}
	default:
		rf := 5 - t.RF // 2 <-> 3
		st.action = fmt.Sprintf("%s replication_factor %d -> %d", name, t.RF, rf)
		st.change = func(d *desired) {
			t := d.Topics[name]
			t.RF = rf
			d.Topics[name] = t
		}
	}
	return st
}

// drawFault gives st a fault that applies to it.
func (s *soak) drawFault(st *step) {
	kinds := []string{faultSIGKILL, faultTimeout, faultRevert, faultTimeoutRevert, faultConcurrent, faultBrokerKill}
	if !s.controllerKilled {
		// Once only: kafkatest does not restart a controller, and a second
		// loss would leave one voter of three.
		kinds = append(kinds, faultControllerKill)
	}
	if st.scaling {
		kinds = append(kinds, faultAPIFail)
	}
	st.fault = kinds[s.rng.IntN(len(kinds))]
	st.delay = time.Duration(1000+s.rng.IntN(5000)) * time.Millisecond
	st.victim = s.rng.IntN(1 << 20)
	st.outage = time.Duration(5+s.rng.IntN(15)) * time.Second
	switch st.fault {
	case faultConcurrent:
		if st.dir == "A" {
			st.other = s.drawTopicChange(st.n, "B")
		} else {
			st.other = s.drawClusterChange(st.n)
		}
	case faultControllerKill:
		s.controllerKilled = true
	}
}
