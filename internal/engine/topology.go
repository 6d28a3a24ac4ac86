package engine

import "strings"

// topology reads brokers' racks as failure domains, one per awareness
// dimension, and checks a replica set's spread over them.
//
// A replica set is spread as the racks allow when, for every dimension d, it
// uses min(RF, V[d]) distinct values, V[d] being the number of values of d
// among the brokers that may receive replicas. That is exactly the outcome of
// KIP-708's rule applied replica by replica: take an unused value of the
// highest-priority dimension that still has one; when a dimension has none
// left, give it up and go on with the next; when all are given up, take the
// least-loaded broker.
type topology struct {
	dims  int
	names []string // dimension names, for messages
	// val[b][d] is broker b's value id in dimension d. Ids are per dimension
	// and hierarchical: equal ids in d mean equal values in 0..d.
	val [][]int32
	// avail[d] is V[d].
	avail []int
	// nvals[d] is the number of value ids in dimension d.
	nvals []int
	// valName[d][id] is the value's text.
	valName [][]string
}

// RackValues splits a broker.rack into its value in each dimension, each
// value naming its parents: with separator "/" and dimensions zone and
// rack, "eu-1a/r3" is ["eu-1a", "eu-1a/r3"].
func (a Awareness) RackValues(rack string) []string {
	return rackValues(rack, a, max(1, len(a.Dimensions)))
}

func rackValues(rack string, a Awareness, dims int) []string {
	if dims == 1 || a.Separator == "" {
		out := make([]string, dims)
		for i := range out {
			out[i] = rack
		}
		return out
	}
	parts := strings.SplitN(rack, a.Separator, dims)
	out := make([]string, dims)
	for d := range dims {
		if d < len(parts) {
			out[d] = strings.Join(parts[:d+1], a.Separator)
		} else {
			out[d] = out[d-1]
		}
	}
	return out
}

// newTopology builds the failure domains of brokers (in planner order);
// receiving[b] says whether broker b may receive replicas.
func newTopology(racks []string, receiving []bool, a Awareness) topology {
	dims := len(a.Dimensions)
	names := a.Dimensions
	if dims == 0 {
		dims, names = 1, []string{"rack"}
	}
	t := topology{
		dims:    dims,
		names:   names,
		val:     make([][]int32, len(racks)),
		avail:   make([]int, dims),
		nvals:   make([]int, dims),
		valName: make([][]string, dims),
	}
	ids := make([]map[string]int32, dims)
	for d := range ids {
		ids[d] = map[string]int32{}
	}
	// Value ids follow the brokers' order, so they are deterministic.
	flat := make([]int32, len(racks)*dims)
	for b, rack := range racks {
		vs := rackValues(rack, a, dims)
		t.val[b] = flat[b*dims : (b+1)*dims : (b+1)*dims]
		for d, v := range vs {
			id, ok := ids[d][v]
			if !ok {
				id = int32(len(ids[d]))
				ids[d][v] = id
				t.valName[d] = append(t.valName[d], v)
			}
			t.val[b][d] = id
		}
	}
	for d := range dims {
		t.nvals[d] = len(ids[d])
		seen := make([]bool, t.nvals[d])
		for b := range racks {
			if receiving[b] && !seen[t.val[b][d]] {
				seen[t.val[b][d]] = true
				t.avail[d]++
			}
		}
	}
	return t
}

// need is how many distinct values of dimension d a set of rf replicas uses
// when spread as the racks allow.
func (t *topology) need(d, rf int) int {
	return min(rf, t.avail[d])
}

// distinct counts the values of dimension d used by set, skipping index skip
// (-1 for none) and adding broker extra (-1 for none).
func (t *topology) distinct(set []int, d int, skip int, extra int) int {
	n := 0
	count := func(i, b int) {
		v := t.val[b][d]
		for j := 0; j < i; j++ {
			if j == skip {
				continue
			}
			if t.val[set[j]][d] == v {
				return
			}
		}
		n++
	}
	for i, b := range set {
		if i == skip {
			continue
		}
		count(i, b)
	}
	if extra >= 0 {
		v := t.val[extra][d]
		for i, b := range set {
			if i != skip && t.val[b][d] == v {
				return n
			}
		}
		n++
	}
	return n
}

// deficit is how many more distinct values the set lacks in its worst
// dimension, for a partition of replication factor rf: zero when the set is
// spread as the racks allow.
func (t *topology) deficit(set []int, rf int) int {
	worst := 0
	for d := range t.dims {
		if m := t.need(d, rf) - t.distinct(set, d, -1, -1); m > worst {
			worst = m
		}
	}
	return worst
}

// replaceKeepsSpread reports whether replacing set[i] by broker b leaves the
// set spread at least as well as the racks require, or, for a set that is not
// yet, no worse than it was in any dimension.
func (t *topology) replaceKeepsSpread(set []int, i, b, rf int) bool {
	for d := range t.dims {
		after := t.distinct(set, d, i, b)
		need := t.need(d, rf)
		if after >= need {
			continue
		}
		if after < t.distinct(set, d, -1, -1) {
			return false
		}
		// Below the need but not worse: allowed only for sets that were
		// already short; a spread set must stay spread.
		if t.distinct(set, d, -1, -1) >= need {
			return false
		}
	}
	return true
}

// newValues scores broker b as an addition to set: bit (dims-1-d) is set when
// b's value in dimension d is unused by the set, so a higher score is a better
// spread, highest-priority dimension first.
func (t *topology) newValues(set []int, b int) int {
	score := 0
	for d := range t.dims {
		v := t.val[b][d]
		used := false
		for _, o := range set {
			if t.val[o][d] == v {
				used = true
				break
			}
		}
		if !used {
			score |= 1 << (t.dims - 1 - d)
		}
	}
	return score
}
