package engine

import (
	"cmp"
	"fmt"
	"slices"
)

// Leaving is which brokers a change of broker count drains and removes.
type Leaving struct {
	// Brokers are the leaving brokers, sorted by id.
	Brokers []int32
	// Replace is true when the count stays: as many new brokers come as
	// leave, and each takes over what a leaving one held.
	Replace bool
	// Dead are the leaving brokers that are fenced or offline now.
	Dead []int32
	// UnderReplicated counts the partitions with a replica on a dead
	// leaving broker: under-replicated now, healed by the change.
	UnderReplicated int
}

// HealingNote says plainly, for the plan, that leaving brokers are dead and
// what the change does about it; empty when none is.
func (l Leaving) HealingNote() string {
	if len(l.Dead) == 0 {
		return ""
	}
	how := "copying each from a surviving replica onto a live broker, then unregisters them"
	if l.Replace {
		how = "copying each from a surviving replica onto the broker that replaces it, then unregisters them"
	}
	return fmt.Sprintf("Brokers %s are dead (fenced or offline). %d partitions have a replica on them and are under-replicated now; "+
		"the apply heals them, %s.", idList(l.Dead), l.UnderReplicated, how)
}

// LeavingError is a choice of leaving brokers that cannot be carried out.
// Attribute names what the user changes to fix it: "remove_broker_ids" or
// "broker_count".
type LeavingError struct {
	Attribute string
	Problem   string
}

func (e *LeavingError) Error() string { return e.Problem }

// Attributes a LeavingError can name.
const (
	AttrRemoveBrokerIDs = "remove_broker_ids"
	AttrBrokerCount     = "broker_count"
)

// ChooseLeaving decides which brokers leave when the cluster c goes to
// target brokers, requested being the ids the user named (none: the default
// choice). With target equal to the current count, requested ids mean a
// replacement.
//
// It refuses, as a *LeavingError: an unknown or repeated id, a count of ids
// that does not match the change, ids on a scale-out, a choice that leaves
// fewer brokers than the largest replication factor, a scale-out while a
// broker is dead, and a removal of live brokers that leaves a dead one
// behind. A dead broker can only be healed by removing or replacing it.
//
// The default choice takes dead brokers first; then it keeps every awareness
// dimension's failure domains as even as the count allows (7 brokers over
// racks a,a,a,b,b,c,c shrunk to 5 keep 2/2/1, not 3/1/1); then it moves the
// fewest bytes; then it removes the highest ids.
func ChooseLeaving(c Cluster, target int, requested []int32, o Options) (Leaving, error) {
	current := len(c.Brokers)
	byID := map[int32]Broker{}
	var registered, dead []int32
	for _, b := range c.Brokers {
		byID[b.ID] = b
		registered = append(registered, b.ID)
		if !b.Alive {
			dead = append(dead, b.ID)
		}
	}
	slices.Sort(registered)
	slices.Sort(dead)
	refuse := func(attr, format string, args ...any) (Leaving, error) {
		return Leaving{}, &LeavingError{Attribute: attr, Problem: fmt.Sprintf(format, args...)}
	}
	ids := slices.Sorted(slices.Values(requested))
	for i, id := range ids {
		if i > 0 && ids[i-1] == id {
			return refuse(AttrRemoveBrokerIDs, "broker %d is named twice", id)
		}
	}
	for _, id := range ids {
		if _, ok := byID[id]; !ok {
			return refuse(AttrRemoveBrokerIDs, "broker %d is not registered; the registered brokers are %s. Name only registered brokers in remove_broker_ids", id, idList(registered))
		}
	}
	var out Leaving
	switch {
	case target > current && len(ids) > 0:
		return refuse(AttrRemoveBrokerIDs, "brokers %s are named to remove, but broker_count %d is above the %d brokers registered: "+
			"a scale-out removes no broker. Remove remove_broker_ids, or set broker_count to %d to replace them",
			idList(ids), target, current, current)
	case target > current:
		if len(dead) > 0 {
			return refuse(AttrBrokerCount, "brokers %s are dead (fenced or offline), so their partitions are under-replicated, and a scale-out "+
				"cannot heal them. Remove them first (broker_count = %d, or remove_broker_ids = %s), or replace them "+
				"(remove_broker_ids = %s with broker_count = %d)",
				idList(dead), current-len(dead), idList(dead), idList(dead), current)
		}
		return out, nil
	case target == current:
		out.Replace = len(ids) > 0
		out.Brokers = ids
	case len(ids) > 0:
		if len(ids) != current-target {
			return refuse(AttrRemoveBrokerIDs, "%d brokers are named to remove, but going from %d to %d brokers removes %d; "+
				"name %d, or set broker_count to %d", len(ids), current, target, current-target, current-target, current-len(ids))
		}
		out.Brokers = ids
	default:
		out.Brokers = defaultLeaving(c, current-target, o)
	}
	for _, id := range out.Brokers {
		if !byID[id].Alive {
			out.Dead = append(out.Dead, id)
		}
	}
	for _, p := range c.Partitions {
		if slices.ContainsFunc(p.Replicas, func(b int32) bool { return slices.Contains(out.Dead, b) }) {
			out.UnderReplicated++
		}
	}
	if len(out.Brokers) > 0 {
		var left []int32
		for _, id := range dead {
			if !slices.Contains(out.Brokers, id) {
				left = append(left, id)
			}
		}
		if live := len(out.Brokers) - len(out.Dead); live > 0 && len(left) > 0 {
			attr := AttrBrokerCount
			if len(ids) > 0 {
				attr = AttrRemoveBrokerIDs
			}
			return refuse(attr, "brokers %s are dead (fenced or offline), but the change removes live brokers %s and keeps them. "+
				"Heal the dead brokers first: remove them (remove_broker_ids = %s) or replace them",
				idList(left), idList(without(out.Brokers, out.Dead)), idList(left))
		}
	}
	staying := current
	if !out.Replace {
		staying -= len(out.Brokers)
	}
	rf, topic := 0, ""
	for _, p := range c.Partitions {
		if len(p.Replicas) > rf {
			rf, topic = len(p.Replicas), p.Topic
		}
	}
	if rf > staying {
		attr := AttrBrokerCount
		if len(ids) > 0 {
			attr = AttrRemoveBrokerIDs
		}
		return refuse(attr, "removing brokers %s leaves %d brokers, fewer than the replication factor %d of topic %s. "+
			"Keep at least %d brokers, or lower the replication factor of %s first",
			idList(out.Brokers), staying, rf, topic, rf, topic)
	}
	return out, nil
}

func without(s, drop []int32) []int32 {
	var out []int32
	for _, x := range s {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// defaultLeaving picks n brokers one at a time. Each pick is the broker
// whose removal keeps the domains most even: per dimension in priority
// order, the brokers per value sorted from most to fewest, compared
// lexicographically (smaller is more even, and a value left with none
// counts as zero). Taking from the fullest domain at each step is what a
// single dimension needs.
func defaultLeaving(c Cluster, n int, o Options) []int32 {
	a := o.Awareness
	dims := max(1, len(a.Dimensions))
	type cand struct {
		Broker
		vals  []string
		bytes int64
	}
	bytes := map[int32]int64{}
	for _, p := range c.Partitions {
		for _, r := range p.Replicas {
			bytes[r] += p.SizeBytes
		}
	}
	cands := make([]cand, len(c.Brokers))
	for i, b := range c.Brokers {
		cands[i] = cand{Broker: b, vals: rackValues(b.Rack, a, dims), bytes: bytes[b.ID]}
	}
	values := make([][]string, dims)
	for d := range dims {
		for _, cd := range cands {
			if !slices.Contains(values[d], cd.vals[d]) {
				values[d] = append(values[d], cd.vals[d])
			}
		}
	}
	gone := make([]bool, len(cands))
	evenness := func(skip int) []int {
		var key []int
		for d := range dims {
			count := map[string]int{}
			for i, cd := range cands {
				if !gone[i] && i != skip {
					count[cd.vals[d]]++
				}
			}
			vec := make([]int, len(values[d]))
			for k, v := range values[d] {
				vec[k] = count[v]
			}
			slices.SortFunc(vec, func(x, y int) int { return cmp.Compare(y, x) })
			key = append(key, vec...)
		}
		return key
	}
	var out []int32
	for range n {
		best := -1
		var bestKey []int
		for i, cd := range cands {
			if gone[i] {
				continue
			}
			key := evenness(i)
			if best < 0 {
				best, bestKey = i, key
				continue
			}
			bc := cands[best]
			c := cmp.Or(
				-cmp.Compare(boolInt(!cd.Alive), boolInt(!bc.Alive)), // dead first
				slices.Compare(key, bestKey),                         // then more even
				compareBytes(cd.bytes, bc.bytes),                     // then clearly fewer bytes
				-cmp.Compare(cd.ID, bc.ID),                           // then the higher id
			)
			if c < 0 {
				best, bestKey = i, key
			}
		}
		gone[best] = true
		out = append(out, cands[best].ID)
	}
	slices.Sort(out)
	return out
}

// compareBytes orders two brokers' bytes to move, counting only a
// difference of more than a tenth of the larger. Brokers holding about the
// same (their partitions grow a little between the plan and the apply)
// then fall to the id rule, so the brokers the plan names are the ones the
// apply removes.
func compareBytes(a, b int64) int {
	if d := a - b; d < 0 && -d*10 > max(a, b) {
		return -1
	} else if d > 0 && d*10 > max(a, b) {
		return 1
	}
	return 0
}
