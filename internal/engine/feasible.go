package engine

import (
	"fmt"
	"slices"
)

// checkFeasible refuses changes no plan can carry out, before any planning.
// Each check passes over every partition only when it could fail: at
// millions of partitions the three passes cost more than some of the
// planning.
func (pl *planner) checkFeasible() error {
	nRecv := 0
	var removed []int32
	anyFrozen, allAlive := false, true
	for _, b := range pl.bs {
		if b.receiving {
			nRecv++
		}
		if b.removed {
			removed = append(removed, b.ID)
		}
		anyFrozen = anyFrozen || b.frozen
		allAlive = allAlive && b.Alive
	}
	// The topic with the largest replication factor that does not fit.
	worst := -1
	for i := range pl.ps {
		p := &pl.ps[i]
		frozen := 0
		if anyFrozen {
			for _, b := range pl.orig(i) {
				if pl.bs[b].frozen {
					frozen++
				}
			}
		}
		if p.rf() > nRecv+frozen && (worst < 0 || p.rf() > pl.ps[worst].rf()) {
			worst = i
		}
	}
	if worst >= 0 {
		p := pl.ps[worst]
		detail := fmt.Sprintf("%d brokers can receive replicas", nRecv)
		if len(removed) > 0 {
			detail = fmt.Sprintf("after removing brokers %s, %s", idList(removed), detail)
		}
		return &InfeasibleError{Constraint: ConstraintBrokerCount, Subject: fmt.Sprintf("topic %s", pl.topic(worst)),
			Need: int64(p.rf()), Limit: int64(nRecv), Unit: "brokers",
			Detail: detail + fmt.Sprintf("; replication factor %d needs as many", p.rf())}
	}
	// Every partition has a replica (buildModel checks), so with every
	// broker alive every partition has one online.
	if !allAlive {
		if err := pl.checkOnline(); err != nil {
			return err
		}
	}
	return pl.checkCapacity(nRecv)
}

// checkOnline refuses a change that copies a partition none of whose
// replicas is online.
func (pl *planner) checkOnline() error {
	for i, p := range pl.ps {
		// Copies come from a live replica; dropping replicas needs none.
		online, copying := false, p.rf() > int(p.n)
		for _, b := range pl.orig(i) {
			online = online || pl.bs[b].Alive
			copying = copying || pl.bs[b].removed
		}
		if copying && !online {
			return &InfeasibleError{Constraint: ConstraintOnlineReplica,
				Subject: fmt.Sprintf("%s p%d", pl.topic(i), p.part), Need: 1, Limit: 0, Unit: "online replicas",
				Detail: fmt.Sprintf("every replica %v is on an offline broker, so none can copy its data", pl.brokerIDs(pl.orig(i)))}
		}
	}
	return nil
}

// checkCapacity refuses a change whose replicas need more than the
// receiving brokers hold in total, when every one's capacity is known.
func (pl *planner) checkCapacity(nRecv int) error {
	var need, room int64
	for _, b := range pl.bs {
		if !b.receiving {
			continue
		}
		if !b.hasLimit {
			return nil
		}
		room += max(0, b.limit-b.other)
	}
	for i, p := range pl.ps {
		for _, b := range pl.cur[i] {
			if !pl.bs[b].frozen {
				need += p.size
			}
		}
		need += p.size * int64(max(0, p.rf()-int(p.n)))
	}
	if need > room {
		return &InfeasibleError{Constraint: ConstraintDiskCapacity, Subject: "the remaining brokers",
			Need: need, Limit: room, Unit: "bytes",
			Detail: fmt.Sprintf("%d brokers can hold %d bytes of replicas with min_free_disk_percent %g", nRecv, room, pl.o.MinFreeDiskPercent)}
	}
	return nil
}

// checkFinalDisk refuses a target that leaves a broker over its disk limit.
func (pl *planner) checkFinalDisk() error {
	for b, bi := range pl.bs {
		if !bi.hasLimit || bi.removed {
			continue
		}
		use := bi.other + pl.bytes[b]
		if use > bi.limit && pl.bytes[b] > 0 {
			grew := false
			for i := range pl.ps {
				if slices.Contains(pl.cur[i], b) && !slices.Contains(pl.orig(i), b) {
					grew = true
					break
				}
			}
			if grew {
				return &InfeasibleError{Constraint: ConstraintDiskCapacity, Subject: fmt.Sprintf("broker %d", bi.ID),
					Need: use, Limit: bi.limit, Unit: "bytes",
					Detail: fmt.Sprintf("the target leaves it over capacity %d less min_free_disk_percent %g", bi.CapacityBytes, pl.o.MinFreeDiskPercent)}
			}
			pl.warnf("broker %d will still hold %d bytes, over its limit of %d bytes: the planner does not move replicas for disk space alone", bi.ID, use, bi.limit)
		}
	}
	return nil
}
