package engine

import (
	"fmt"
	"slices"
)

// PendingUploadUnknownMoves lists, as "topic-partition" and sorted, the
// partitions p gives a new replica while their new follower cannot start
// (Partition.PendingUploadUnknown): a move of one of them waits until a
// record is written to it. A move that only drops or reorders replicas
// starts no follower and is not listed.
func PendingUploadUnknownMoves(c Cluster, p *Plan) []string {
	if p == nil {
		return nil
	}
	type key struct {
		topic     string
		partition int32
	}
	stuck := map[key]bool{}
	for _, part := range c.Partitions {
		if part.PendingUploadUnknown {
			stuck[key{part.Topic, part.Partition}] = true
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	var out []string
	for _, m := range p.Moves() {
		tp := key{m.Topic, m.Partition}
		if stuck[tp] && len(m.Adding) > 0 {
			out = append(out, fmt.Sprintf("%s-%d", m.Topic, m.Partition))
			delete(stuck, tp) // a partition moved in two groups is named once
		}
	}
	slices.Sort(out)
	return out
}
