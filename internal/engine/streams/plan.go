package streams

import (
	"maps"
	"slices"
	"strings"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// bundled is one app of a request, with its settings.
type bundled struct {
	CoApp
	lead bool
}

// tag is what a problem about the app puts in Problem.App: empty
// for the request's app.
func (b bundled) tag() string {
	if b.lead {
		return ""
	}
	return b.App.ID
}

// streamsGrowth is which topics of the apps grow, and from what.
type streamsGrowth struct {
	target int32
	// current is every growable topic's count now.
	current map[string]int32
	// sinks grow first, alone: no app of the expansion reads them.
	// together grow in one request: sources, consumed internal topics,
	// and sinks another app of the expansion reads.
	sinks, together map[string]bool
}

func (g streamsGrowth) grows() bool { return len(g.sinks)+len(g.together) > 0 }

func (g streamsGrowth) sinkList() []string { return slices.Sorted(maps.Keys(g.sinks)) }

func (g streamsGrowth) togetherList() []string { return slices.Sorted(maps.Keys(g.together)) }

// PlanExpansion turns an app's declared partition count into
// ordered steps: sinks first (no rebalance follows), then the sources and
// internal topics in one request (so the next rebalance sees one
// consistent topology), then wait for stability, then notify. With
// CoExpand, the apps that share sources grow as one: their sinks together,
// every live classic app stopped before one request grows every source and
// internal topic of them all and started after it, then each is waited for
// and notified. Every problem with the request comes back at once as an
// *engine.InputError of *Problem, before anything would change.
//
// withNotify adds the notify step of the request's app; the caller knows
// whether an endpoint is set.
func PlanExpansion(r ExpansionRequest, withNotify bool) (Expansion, error) {
	apps := []bundled{{CoApp: CoApp{App: r.App, Quiesce: r.Quiesce, Notify: withNotify, Fixed: r.Fixed}, lead: true}}
	for _, c := range r.CoExpand {
		apps = append(apps, bundled{CoApp: c})
	}
	x := Expansion{App: r.App.ID, Protocol: r.App.Protocol, From: r.App.Partitions(), To: r.Target}
	problems := markFixedTopics(r, apps, &x)
	problems = append(problems, declarationProblems(r, apps)...)
	g, shrinks := classifyTopics(r.Target, apps)
	problems = append(problems, shrinks...)
	problems = append(problems, appProblems(g, apps, &x)...)
	if g.grows() && !r.StaticPartitioning {
		problems = append(problems, &Problem{Kind: ProblemNotStatic, Field: FieldStatic, Subject: r.App.ID, Apps: x.AppIDs()[1:], Target: r.Target})
	}
	if g.grows() {
		for _, p := range crossAppProblems(r, apps, g) {
			if r.DownstreamLater && p.Kind == ProblemDownstream {
				x.Warnings = append(x.Warnings, p)
				continue
			}
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = p
		}
		return x, &engine.InputError{Problems: errs}
	}
	if !g.grows() {
		finishSteps(&x, r, apps)
		return x, nil
	}
	growthSteps(&x, r, apps, g)
	return x, nil
}

// markFixedTopics finds each app's fixed internal topics and marks them on
// its topics, so that nothing after grows them, and starts x.Apps. An app
// declared twice is a problem.
func markFixedTopics(r ExpansionRequest, apps []bundled, x *Expansion) []*Problem {
	var problems []*Problem
	seen := map[string]bool{}
	for i := range apps {
		b := &apps[i]
		if seen[b.App.ID] {
			problems = append(problems, &Problem{Kind: ProblemDeclaredTwice, Field: FieldApp, App: b.App.ID, Subject: b.App.ID})
		}
		seen[b.App.ID] = true
		fixed := FixedInternalTopics(b.App, b.Fixed, r.Settled, r.Target)
		a := b.App
		a.Topics = slices.Clone(a.Topics)
		for j, t := range a.Topics {
			a.Topics[j].Fixed = slices.ContainsFunc(fixed, func(f FixedTopic) bool { return f.Name == t.Name })
		}
		b.App = a
		x.Apps = append(x.Apps, ExpansionApp{App: a.ID, Protocol: a.Protocol, Members: a.Members, From: a.Partitions(), Fixed: fixed})
	}
	x.Fixed = x.Apps[0].Fixed
	return problems
}

// declarationProblems checks what the user declared against the cluster:
// a count of at least 1, apps that exist, fixed topics that are internal,
// sources and sinks that exist.
func declarationProblems(r ExpansionRequest, apps []bundled) []*Problem {
	var problems []*Problem
	if r.Target < 1 {
		problems = append(problems, &Problem{Kind: ProblemTargetTooLow, Field: FieldPartitions, Subject: r.App.ID, Target: r.Target})
	}
	for _, b := range apps {
		a := b.App
		if !a.GroupExists && len(a.InternalTopics()) == 0 {
			problems = append(problems, &Problem{Kind: ProblemUnknownApp, Field: FieldApp, App: b.tag(), Subject: a.ID})
		}
		for _, name := range b.Fixed {
			if t, ok := a.topic(name); !ok || !t.Role.Internal() {
				problems = append(problems, &Problem{Kind: ProblemNotInternal, Field: FieldFixed, App: b.tag(), Subject: a.ID, Topic: name, Topics: a.InternalTopics()})
			}
		}
		for _, t := range a.Topics {
			if t.Partitions == 0 && (t.Role == RoleSource || t.Role == RoleSink) {
				f := FieldSources
				if t.Role == RoleSink {
					f = FieldSinks
				}
				problems = append(problems, &Problem{Kind: ProblemMissingTopic, Field: f, App: b.tag(), Subject: a.ID, Topic: t.Name, Role: t.Role})
			}
		}
	}
	return problems
}

// classifyTopics sorts every existing, non-fixed topic of the apps: one
// above target cannot shrink (a problem), a sink no app of the expansion
// reads grows first, alone, and the rest below target grow together. A
// sink of one app that another app reads grows with the sources, not
// before them.
func classifyTopics(target int32, apps []bundled) (streamsGrowth, []*Problem) {
	g := streamsGrowth{target: target, current: map[string]int32{}, sinks: map[string]bool{}, together: map[string]bool{}}
	consumedInBundle := map[string]bool{}
	for _, b := range apps {
		for _, t := range b.App.Topics {
			if t.Role.Consumed() {
				consumedInBundle[t.Name] = true
			}
		}
	}
	var problems []*Problem
	for _, b := range apps {
		for _, t := range b.App.Topics {
			if t.Partitions == 0 || t.Fixed {
				continue
			}
			g.current[t.Name] = t.Partitions
			switch {
			case target < t.Partitions:
				problems = append(problems, &Problem{Kind: ProblemShrink, Field: FieldPartitions, App: b.tag(), Subject: b.App.ID,
					Topic: t.Name, Role: t.Role, Partitions: t.Partitions, Target: target, Err: engine.CheckNoShrink(t.Name, int(t.Partitions), int(target))})
			case target > t.Partitions && t.Role == RoleSink && !consumedInBundle[t.Name]:
				g.sinks[t.Name] = true
			case target > t.Partitions:
				g.together[t.Name] = true
			}
		}
	}
	return g, problems
}

// appProblems fills in what each app consumes after the expansion and the
// topics it grows, and checks each app on its own: co-partitioning always
// (an adoption included), and, when something grows, sources of uneven
// counts and a live classic group with no way to stop it.
func appProblems(g streamsGrowth, apps []bundled, x *Expansion) []*Problem {
	var problems []*Problem
	together := g.togetherList()
	for i, b := range apps {
		a := b.App
		consumed := map[string]int32{}
		var mine []string
		for _, t := range a.Topics {
			if t.Role.Consumed() && t.Partitions > 0 {
				consumed[t.Name] = t.Partitions
				if g.together[t.Name] {
					consumed[t.Name] = g.target
				}
			}
			if g.sinks[t.Name] || g.together[t.Name] {
				mine = append(mine, t.Name)
			}
		}
		slices.Sort(mine)
		x.Apps[i].Consumed, x.Apps[i].Topics = consumed, slices.Compact(mine)
		own := copartitionProblems(a, g.target, together)
		if g.grows() {
			if p := unevenSources(a, g.target); p != nil {
				own = append(own, p)
			}
			if a.Protocol == ProtocolClassic && a.Members > 0 && !b.Quiesce {
				own = append(own, &Problem{Kind: ProblemClassicLive, Field: FieldQuiesce, Subject: a.ID, Members: a.Members})
			}
		}
		for _, p := range own {
			p.App = b.tag()
		}
		problems = append(problems, own...)
	}
	x.Consumed = x.Apps[0].Consumed
	return problems
}

// appStep is a step about one app; a plan for one app names none.
func appStep(x *Expansion, k StepKind, id string, n int32) Step {
	s := Step{Kind: k, Partitions: n}
	if len(x.Apps) > 1 {
		s.App = id
	}
	return s
}

// finishSteps are the steps when everything has grown: what an
// interrupted apply left, the waits and notifications, when the app was
// last seen settled below the target.
func finishSteps(x *Expansion, r ExpansionRequest, apps []bundled) {
	if r.Settled <= 0 || r.Settled >= r.Target || x.From != r.Target {
		return
	}
	x.From = r.Settled
	for i, b := range apps {
		x.Apps[i].From = r.Settled
		if b.App.Members > 0 {
			x.Steps = append(x.Steps, appStep(x, StepAwaitStable, b.App.ID, r.Target))
		}
	}
	for _, b := range apps {
		if b.Notify {
			x.Steps = append(x.Steps, appStep(x, StepNotify, b.App.ID, r.Target))
		}
	}
}

// growthSteps are the steps of an expansion that grows topics, in the
// order the type's comment gives, and the warnings for the plain consumer
// groups that read them.
func growthSteps(x *Expansion, r ExpansionRequest, apps []bundled, g streamsGrowth) {
	sinks, together := g.sinkList(), g.togetherList()
	var growths []TopicGrowth
	for _, t := range append(slices.Clone(sinks), together...) {
		growths = append(growths, TopicGrowth{Topic: t, From: g.current[t], To: r.Target})
	}
	x.GroupWarnings = ConsumerGroupWarnings(growths, r.Groups)

	if len(sinks) > 0 {
		x.Steps = append(x.Steps, Step{Kind: StepGrowSinks, Topics: sinks, Partitions: r.Target})
	}
	var quiesced []string
	for _, b := range apps {
		if b.Quiesce && b.App.Protocol == ProtocolClassic && b.App.Members > 0 {
			quiesced = append(quiesced, b.App.ID)
		}
	}
	for _, id := range quiesced {
		x.Steps = append(x.Steps, appStep(x, StepStopApp, id, 0))
	}
	for _, id := range quiesced {
		x.Steps = append(x.Steps, appStep(x, StepAwaitEmpty, id, 0))
	}
	if len(together) > 0 {
		var keep []FixedTopic
		for _, a := range x.Apps {
			keep = append(keep, a.Fixed...)
		}
		slices.SortFunc(keep, func(p, q FixedTopic) int { return strings.Compare(p.Name, q.Name) })
		x.Steps = append(x.Steps, Step{Kind: StepGrowTogether, Topics: together, Partitions: r.Target, Keep: keep})
	}
	for _, id := range quiesced {
		x.Steps = append(x.Steps, appStep(x, StepStartApp, id, 0))
	}
	for _, b := range apps {
		if b.App.Members > 0 {
			x.Steps = append(x.Steps, appStep(x, StepAwaitStable, b.App.ID, r.Target))
		}
	}
	for _, b := range apps {
		if b.Notify {
			x.Steps = append(x.Steps, appStep(x, StepNotify, b.App.ID, r.Target))
		}
	}
}
