package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
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

// LeavingField is what the user changes to fix a refused choice of
// leaving brokers.
type LeavingField int

const (
	// FieldNamedBrokers is the list of brokers named to leave.
	FieldNamedBrokers LeavingField = iota + 1
	// FieldBrokerCount is the broker count asked for.
	FieldBrokerCount
)

// LeavingReason is why a choice of leaving brokers cannot be carried out.
type LeavingReason int

const (
	// NamedTwice: Brokers[0] is named twice.
	NamedTwice LeavingReason = iota + 1
	// NotRegistered: Brokers[0] is not among Registered.
	NotRegistered
	// NamedOnScaleOut: Brokers are named, but Target is above Current.
	NamedOnScaleOut
	// DeadOnScaleOut: Dead brokers cannot be healed by a scale-out.
	DeadOnScaleOut
	// NamedCountMismatch: len(Brokers) named, but going from Current to
	// Target removes another number.
	NamedCountMismatch
	// DeadKept: the change removes live Brokers and keeps the Dead ones.
	DeadKept
	// BelowReplicationFactor: removing Brokers leaves Staying brokers,
	// fewer than ReplicationFactor, the largest, of Topic.
	BelowReplicationFactor
)

// LeavingError is a choice of leaving brokers that cannot be carried out,
// as data: why, what the user changes to fix it, and the brokers and
// counts involved (which are set depends on Reason).
type LeavingError struct {
	Reason LeavingReason
	Field  LeavingField
	// Brokers are those the refusal is about: the one named twice or
	// unknown, those named, or those the change removes.
	Brokers []int32
	// Dead are the dead brokers the change cannot heal or keeps.
	Dead []int32
	// Registered are all registered brokers, sorted by id.
	Registered      []int32
	Current, Target int
	// Staying is how many brokers the change leaves.
	Staying           int
	ReplicationFactor int
	Topic             string
}

func (e *LeavingError) Error() string {
	switch e.Reason {
	case NamedTwice:
		return fmt.Sprintf("broker %d is named twice", e.Brokers[0])
	case NotRegistered:
		return fmt.Sprintf("broker %d is not registered; the registered brokers are %s", e.Brokers[0], idList(e.Registered))
	case NamedOnScaleOut:
		return fmt.Sprintf("brokers %s are named to leave, but going from %d to %d brokers is a scale-out, which removes none",
			idList(e.Brokers), e.Current, e.Target)
	case DeadOnScaleOut:
		return fmt.Sprintf("brokers %s are dead (fenced or offline), and a scale-out cannot heal them", idList(e.Dead))
	case NamedCountMismatch:
		return fmt.Sprintf("%d brokers are named to leave, but going from %d to %d brokers removes %d",
			len(e.Brokers), e.Current, e.Target, e.Current-e.Target)
	case DeadKept:
		return fmt.Sprintf("brokers %s are dead (fenced or offline), but the change removes live brokers %s and keeps them",
			idList(e.Dead), idList(e.Brokers))
	default:
		return fmt.Sprintf("removing brokers %s leaves %d brokers, fewer than the replication factor %d of topic %s",
			idList(e.Brokers), e.Staying, e.ReplicationFactor, e.Topic)
	}
}

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
	refuse := func(e LeavingError) (Leaving, error) {
		e.Registered, e.Current, e.Target = registered, current, target
		return Leaving{}, &e
	}
	ids := slices.Sorted(slices.Values(requested))
	for i, id := range ids {
		if i > 0 && ids[i-1] == id {
			return refuse(LeavingError{Reason: NamedTwice, Field: FieldNamedBrokers, Brokers: []int32{id}})
		}
	}
	for _, id := range ids {
		if _, ok := byID[id]; !ok {
			return refuse(LeavingError{Reason: NotRegistered, Field: FieldNamedBrokers, Brokers: []int32{id}})
		}
	}
	var out Leaving
	switch {
	case target > current && len(ids) > 0:
		return refuse(LeavingError{Reason: NamedOnScaleOut, Field: FieldNamedBrokers, Brokers: ids})
	case target > current:
		if len(dead) > 0 {
			return refuse(LeavingError{Reason: DeadOnScaleOut, Field: FieldBrokerCount, Dead: dead})
		}
		return out, nil
	case target == current:
		out.Replace = len(ids) > 0
		out.Brokers = ids
	case len(ids) > 0:
		if len(ids) != current-target {
			return refuse(LeavingError{Reason: NamedCountMismatch, Field: FieldNamedBrokers, Brokers: ids})
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
			return refuse(LeavingError{Reason: DeadKept, Field: fieldOf(ids), Brokers: without(out.Brokers, out.Dead), Dead: left})
		}
	}
	staying := current
	if !out.Replace {
		staying -= len(out.Brokers)
	}
	rf, topic := 0, ""
	for _, p := range c.Partitions {
		// The topic named is one the user can act on: among those with
		// the largest factor, a topic of theirs before Kafka's internal
		// ones ("__"), then by name, so the refusal reads the same
		// whatever order the partitions come in.
		if n := len(p.Replicas); n > rf || n == rf && namedFirst(p.Topic, topic) {
			rf, topic = n, p.Topic
		}
	}
	if rf > staying {
		return refuse(LeavingError{Reason: BelowReplicationFactor, Field: fieldOf(ids), Brokers: out.Brokers, Staying: staying,
			ReplicationFactor: rf, Topic: topic})
	}
	return out, nil
}

// namedFirst reports whether topic a is named before b in a refusal:
// a user's topic before an internal one, then by name.
func namedFirst(a, b string) bool {
	ai, bi := strings.HasPrefix(a, "__"), strings.HasPrefix(b, "__")
	if ai != bi {
		return bi
	}
	return a < b
}

// fieldOf is what fixes a refused choice: the named brokers when some
// were named, else the count.
func fieldOf(named []int32) LeavingField {
	if len(named) > 0 {
		return FieldNamedBrokers
	}
	return FieldBrokerCount
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
