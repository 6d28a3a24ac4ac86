package streams

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FixedBy says how kafkascale knows that an internal topic keeps its count.
type FixedBy string

// The ways a topic is found fixed.
const (
	// FixedByUser: the user declared it fixed.
	FixedByUser FixedBy = "declared"
	// FixedByTopology: a streams-protocol group's topology fixes it
	// (Repartitioned.withNumberOfPartitions), directly or because every
	// topic its subtopology reads is fixed.
	FixedByTopology FixedBy = "topology"
	// FixedByCount: no topology tells (classic protocol, or a topic the
	// topology does not mention), and its count differs from the sources'
	// with no unfinished expansion to explain it.
	FixedByCount FixedBy = "count"
)

// FixedTopic is one internal topic an expansion leaves at its count.
type FixedTopic struct {
	Name       string
	Partitions int32
	By         FixedBy
	// Why is the sentence the plan shows.
	Why string
}

// FixedInternalTopics finds the app's internal topics whose partition count
// does not follow the sources, so that neither an adoption nor an expansion
// ever grows them: Streams expects such a topic at its own count, and kills
// the app when it finds another.
//
//   - declared are the topics the user declares fixed, fixed whatever
//     the cluster shows.
//   - Under the streams protocol the group's topology tells: a repartition
//     topic whose count the topology fixes is fixed; a subtopology whose
//     tasks read only fixed topics is fixed, and so are its changelogs and
//     the repartition topics only fixed subtopologies write. While an
//     expansion from settled to target is unfinished, a repartition topic
//     the topology reports at one of the two counts while its writers
//     give the other is not taken as fixed: the app is between the two
//     counts (its tasks still on the sources' old count, the topic
//     already grown), and judged then the topic would stay fixed for good.
//   - Where no topology tells (the classic protocol, whose broker never
//     sees the topology, or a topic the topology does not mention), an
//     internal topic whose count differs from the sources' is fixed, unless
//     an unfinished expansion explains the difference: settled below
//     target means kafkascale recorded an expansion from settled to target
//     that has not finished, and a topic at either count is one it left
//     behind or grew ahead.
//
// The result is sorted by name; the input is not changed.
func FixedInternalTopics(a App, declared []string, settled, target int32) []FixedTopic {
	found := map[string]FixedTopic{}
	for _, name := range declared {
		t, _ := a.topic(name)
		found[name] = FixedTopic{Name: name, Partitions: t.Partitions, By: FixedByUser, Why: "declared fixed"}
	}
	mentioned := map[string]bool{}
	for _, st := range a.Subtopologies {
		for _, s := range st.Sources {
			mentioned[s] = true
		}
		for _, s := range st.RepartitionSinks {
			mentioned[s] = true
		}
		for _, s := range st.Changelogs {
			mentioned[s] = true
		}
	}
	for name, f := range fixedByTopology(a.Subtopologies, settled, target) {
		if _, ok := found[name]; !ok {
			t, _ := a.topic(name)
			f.Name, f.Partitions = name, t.Partitions
			found[name] = f
		}
	}
	sources := a.Partitions()
	unfinished := expanding(settled, target)
	for _, t := range a.Topics {
		if !t.Role.Internal() || t.Partitions == 0 || sources == 0 || t.Partitions == sources || mentioned[t.Name] {
			continue
		}
		if _, ok := found[t.Name]; ok {
			continue
		}
		if unfinished && (t.Partitions == settled || t.Partitions == target) {
			continue
		}
		why := fmt.Sprintf("its %d partitions differ from the sources' %d, and no unfinished kafkascale expansion explains it", t.Partitions, sources)
		if a.Protocol != ProtocolStreams || len(a.Subtopologies) == 0 {
			why += "; the group does not report its topology (classic rebalance protocol), so kafkascale judges by the count"
		} else {
			why += "; the group's topology does not mention it"
		}
		found[t.Name] = FixedTopic{Name: t.Name, Partitions: t.Partitions, By: FixedByCount, Why: why}
	}
	out := make([]FixedTopic, 0, len(found))
	for _, n := range slices.Sorted(maps.Keys(found)) {
		out = append(out, found[n])
	}
	return out
}

// expanding says whether settled below target records an expansion that
// has not finished.
func expanding(settled, target int32) bool { return settled > 0 && settled < target }

// FixedTopicNames are the topics' names, in their order.
func FixedTopicNames(fs []FixedTopic) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// fixedByTopology finds what the topology fixes. The coordinator reports
// each repartition topic at the count it requires, and Streams derives a
// repartition topic's count from the subtopologies writing it (their most
// tasks, a subtopology having as many tasks as its widest source); a
// reported count other than the derived one is one the topology fixes
// (Repartitioned.withNumberOfPartitions). A fixed count equal to the
// derived one cannot be told apart: the user lists such a topic. Then a
// subtopology whose sources are all fixed is fixed, with its changelogs and
// the repartition topics only fixed subtopologies write, until nothing
// changes. It returns the fixed topics with the reason.
func fixedByTopology(subs []Subtopology, settled, target int32) map[string]FixedTopic {
	// explained says whether a topic at n where its writers give derived
	// is an unfinished expansion's, not a fixed count.
	explained := func(n, derived int32) bool {
		return expanding(settled, target) && (n == settled || n == target) && (derived == settled || derived == target)
	}
	writers := map[string][]string{}
	tasks := map[string]int32{}
	for _, st := range subs {
		for _, r := range st.RepartitionSinks {
			writers[r] = append(writers[r], st.ID)
		}
		for _, s := range st.Sources {
			tasks[st.ID] = max(tasks[st.ID], st.SourcePartitions[s])
		}
	}
	out := map[string]FixedTopic{}
	for _, st := range subs {
		for _, s := range st.Sources {
			ws := writers[s]
			if len(ws) == 0 {
				continue // not written inside the app: follows the sources
			}
			var derived int32
			for _, w := range ws {
				derived = max(derived, tasks[w])
			}
			if n := st.SourcePartitions[s]; n > 0 && derived > 0 && n != derived && !explained(n, derived) {
				out[s] = FixedTopic{By: FixedByTopology, Why: fmt.Sprintf("the topology fixes repartition topic %s at %d partitions (Repartitioned.withNumberOfPartitions), where its writers would give it %d", s, n, derived)}
			}
		}
	}
	fixedSub := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, st := range subs {
			if fixedSub[st.ID] || len(st.Sources) == 0 {
				continue
			}
			all := true
			for _, s := range st.Sources {
				if _, ok := out[s]; !ok {
					all = false
					break
				}
			}
			if !all {
				continue
			}
			fixedSub[st.ID], changed = true, true
			for _, cl := range st.Changelogs {
				out[cl] = FixedTopic{By: FixedByTopology, Why: fmt.Sprintf("changelog of subtopology %s, whose tasks read only fixed topics (%d tasks)", st.ID, tasks[st.ID])}
			}
			for _, r := range st.RepartitionSinks {
				if _, ok := out[r]; ok {
					continue
				}
				only := true
				for _, w := range writers[r] {
					only = only && (fixedSub[w] || w == st.ID)
				}
				if only {
					out[r] = FixedTopic{By: FixedByTopology, Why: fmt.Sprintf("repartition topic %s is written only by subtopologies %s, whose tasks read only fixed topics", r, strings.Join(writers[r], ", "))}
				}
			}
		}
	}
	return out
}
