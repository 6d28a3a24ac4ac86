package streams

import (
	"maps"
	"slices"
)

// copartitionProblems finds topics that must end with equal counts but
// would not: a consumed topic left out of the expansion, a subtopology whose
// sources would differ, a changelog that would not match its tasks.
func copartitionProblems(a App, target int32, together []string) []*Problem {
	var problems []*Problem
	final := func(name string) (int32, bool) {
		t, ok := a.topic(name)
		if !ok {
			return 0, false
		}
		if slices.Contains(together, name) {
			return target, true
		}
		return t.Partitions, true
	}
	for _, c := range a.Consumed {
		t, ok := a.topic(c)
		if !ok {
			problems = append(problems, &Problem{Kind: ProblemUnlistedSource, Field: FieldSources, Subject: a.ID, Topic: c, Target: target})
			continue
		}
		if t.Role == RoleSink {
			problems = append(problems, &Problem{Kind: ProblemConsumedSink, Field: FieldSinks, Subject: a.ID, Topic: c})
		}
	}
	for _, st := range a.Subtopologies {
		counts := map[int32][]string{}
		var tasks int32
		for _, s := range st.Sources {
			n, ok := final(s)
			if !ok {
				continue
			}
			counts[n] = append(counts[n], s)
			tasks = max(tasks, n)
		}
		if len(counts) > 1 {
			p := &Problem{Kind: ProblemUnequalSubtopology, Field: FieldFixed, Subject: a.ID, Subtopology: st.ID}
			for _, n := range slices.Sorted(maps.Keys(counts)) {
				p.Counts = append(p.Counts, TopicsAtCount{Topics: counts[n], Partitions: n})
			}
			problems = append(problems, p)
		}
		for _, cl := range st.Changelogs {
			if n, ok := final(cl); ok && tasks > 0 && n != tasks {
				problems = append(problems, &Problem{Kind: ProblemChangelogTasks, Field: FieldFixed, Subject: a.ID, Topic: cl, Partitions: n, Subtopology: st.ID, Tasks: tasks})
			}
		}
	}
	return problems
}

// crossAppProblems enforces the order across apps, for the apps outside
// the expansion: an app that consumes a sink the expansion grows is
// downstream and must be expanded first (its own expansion grows those
// topics with its internal topics), and an app that reads a source the
// expansion grows must be part of it, declared, so that its other sources
// and internal topics grow in the same request.
func crossAppProblems(r ExpansionRequest, apps []bundled, g streamsGrowth) []*Problem {
	in := map[string]bool{}
	var bundle []App
	for _, b := range apps {
		in[b.App.ID] = true
		bundle = append(bundle, b.App)
	}
	var problems []*Problem
	undeclared := map[string][]string{}
	var outsiders []App
	for _, o := range sortedApps(r.Others) {
		if in[o.ID] {
			continue
		}
		for _, src := range o.TopicsWith(RoleSource) {
			switch {
			case g.sinks[src]:
				// A cycle has no order to show; the problem stands.
				order, _ := OrderApps(append(slices.Clone(bundle), o))
				problems = append(problems, &Problem{Kind: ProblemDownstream, Field: FieldSinks, Subject: r.App.ID, Topic: src,
					Readers: []Reader{readerOf(o, false, []string{src})}, Order: order, Target: r.Target})
			case g.together[src]:
				if len(undeclared[o.ID]) == 0 {
					outsiders = append(outsiders, o)
				}
				undeclared[o.ID] = append(undeclared[o.ID], src)
			}
		}
	}
	if len(outsiders) == 0 {
		return problems
	}
	p := &Problem{Kind: ProblemUndeclaredReaders, Field: FieldCoExpand, Subject: r.App.ID, Target: r.Target}
	for _, b := range apps {
		var mine []string
		for _, t := range b.App.Topics {
			if t.Role == RoleSource && g.together[t.Name] {
				mine = append(mine, t.Name)
			}
		}
		slices.Sort(mine)
		p.Readers = append(p.Readers, readerOf(b.App, true, mine))
	}
	for _, o := range outsiders {
		p.Readers = append(p.Readers, readerOf(o, false, undeclared[o.ID]))
	}
	return append(problems, p)
}

// unevenSources refuses to grow sources whose counts differ when no
// topology says which of them are co-partitioned: the internal topics'
// counts then cannot be told apart from the sources', and a join over
// sources made equal only now would pair keys that never met.
func unevenSources(a App, target int32) *Problem {
	if len(a.Subtopologies) > 0 {
		return nil
	}
	var lo, hi *Topic
	for i, t := range a.Topics {
		if t.Role != RoleSource || t.Partitions == 0 || t.Fixed {
			continue
		}
		if lo == nil || t.Partitions < lo.Partitions || (t.Partitions == lo.Partitions && t.Name < lo.Name) {
			lo = &a.Topics[i]
		}
		if hi == nil || t.Partitions > hi.Partitions || (t.Partitions == hi.Partitions && t.Name < hi.Name) {
			hi = &a.Topics[i]
		}
	}
	if lo == nil || lo.Partitions == hi.Partitions {
		return nil
	}
	return &Problem{Kind: ProblemUnevenSources, Field: FieldSources, Subject: a.ID, Target: target, Counts: []TopicsAtCount{
		{Topics: []string{lo.Name}, Partitions: lo.Partitions}, {Topics: []string{hi.Name}, Partitions: hi.Partitions}}}
}
