package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// StreamsExpansionRequest is one app's declared change.
type StreamsExpansionRequest struct {
	App StreamsApp
	// Target is the partition count every source, sink and non-fixed
	// internal topic should reach.
	Target int32
	// StaticPartitioning is the user's word that every producer keeps each
	// existing key in its partition, so new partitions only get new keys.
	StaticPartitioning bool
	// Quiesce is true when the user gave a command that stops and starts
	// the app.
	Quiesce bool
	// Others are the other Streams apps on the cluster, for the ordering
	// across apps.
	Others []StreamsApp
	// DownstreamLater turns "a downstream app has not grown yet" into a
	// warning: at plan time the downstream app may be expanded earlier in
	// the same apply. At apply time it must be false.
	DownstreamLater bool
	// Settled is the count at which the app was last seen stable after an
	// expansion (0: unknown). Below Target with nothing left to grow, an
	// earlier apply stopped before its wait or its notification, and the
	// plan finishes them.
	Settled int32
	// Fixed are the internal topics the user declares fixed; the plan adds
	// those it finds (FixedInternalTopics).
	Fixed []string
}

// StreamsStepKind names one step of an expansion.
type StreamsStepKind string

// The steps, in the order they can appear.
const (
	StepGrowSinks    StreamsStepKind = "grow-sinks"
	StepStopApp      StreamsStepKind = "stop-app"
	StepAwaitEmpty   StreamsStepKind = "await-empty-group"
	StepGrowTogether StreamsStepKind = "grow-sources-and-internal-topics"
	StepStartApp     StreamsStepKind = "start-app"
	StepAwaitStable  StreamsStepKind = "await-stable"
	StepNotify       StreamsStepKind = "notify"
)

// StreamsStep is one step. Grow steps name their topics, which are grown
// in ONE CreatePartitions request.
type StreamsStep struct {
	Kind       StreamsStepKind
	Topics     []string
	Partitions int32
	// Keep are the fixed internal topics the grow step leaves alone, named
	// so that the plan shows them.
	Keep []FixedTopic `json:",omitempty"`
}

// String is the line `terraform plan` shows for the step.
func (s StreamsStep) String() string {
	switch s.Kind {
	case StepGrowSinks:
		return fmt.Sprintf("grow sink topics %s to %d partitions (not consumed by the app: no rebalance)", strings.Join(s.Topics, ", "), s.Partitions)
	case StepStopApp:
		return "run the quiesce stop command"
	case StepAwaitEmpty:
		return "wait until the group has no members"
	case StepGrowTogether:
		line := fmt.Sprintf("grow %s to %d partitions in one CreatePartitions request", strings.Join(s.Topics, ", "), s.Partitions)
		if len(s.Keep) > 0 {
			keep := make([]string, len(s.Keep))
			for i, f := range s.Keep {
				keep[i] = fmt.Sprintf("%s at %d", f.Name, f.Partitions)
			}
			line += fmt.Sprintf(" (fixed internal topics keep their counts: %s)", strings.Join(keep, ", "))
		}
		return line
	case StepStartApp:
		return "run the quiesce start command"
	case StepAwaitStable:
		return fmt.Sprintf("wait until the group is stable on %d partitions for the quiet period", s.Partitions)
	case StepNotify:
		return fmt.Sprintf("call on_expansion_url with the old and new counts (%d)", s.Partitions)
	}
	return string(s.Kind)
}

// StreamsExpansion is the ordered plan for one app.
type StreamsExpansion struct {
	App      string
	Protocol StreamsProtocol
	From, To int32
	Steps    []StreamsStep
	// Fixed are internal topics left at their count, with the reason.
	Fixed []FixedTopic
	// Consumed gives every topic the app's tasks read its count after the
	// expansion: what a stable group's assignment must cover.
	Consumed map[string]int32
	// Warnings are downstream apps that must grow first (with
	// DownstreamLater).
	Warnings []error
}

// Lines renders the steps for `terraform plan`, numbered.
func (x StreamsExpansion) Lines() []string {
	out := make([]string, len(x.Steps))
	for i, s := range x.Steps {
		out[i] = fmt.Sprintf("%d. %s", i+1, s)
	}
	return out
}

// FixedNames are the names of the fixed internal topics, sorted.
func (x StreamsExpansion) FixedNames() []string { return FixedTopicNames(x.Fixed) }

// Has reports whether the plan contains a step of kind k.
func (x StreamsExpansion) Has(k StreamsStepKind) bool {
	return slices.ContainsFunc(x.Steps, func(s StreamsStep) bool { return s.Kind == k })
}

// PlanStreamsExpansion turns an app's declared partition count into the
// ordered steps of DESIGN.md section 4: sinks first (no rebalance follows),
// then the sources and internal topics in one request (so the next
// rebalance sees one consistent topology), then wait for stability, then
// notify. Every problem with the request comes back at once as an
// *InputError, before anything would change.
//
// withNotify adds the notify step; the caller knows whether a URL is set.
func PlanStreamsExpansion(r StreamsExpansionRequest, withNotify bool) (StreamsExpansion, error) {
	a := r.App
	x := StreamsExpansion{App: a.ID, Protocol: a.Protocol, From: a.Partitions(), To: r.Target}
	x.Fixed = FixedInternalTopics(a, r.Fixed, r.Settled, r.Target)
	a.Topics = slices.Clone(a.Topics)
	for i, t := range a.Topics {
		a.Topics[i].Fixed = slices.ContainsFunc(x.Fixed, func(f FixedTopic) bool { return f.Name == t.Name })
	}
	r.App = a
	var problems []error
	add := func(f StreamsField, format string, args ...any) {
		problems = append(problems, problem(f, format, args...))
	}

	if !a.GroupExists && len(a.InternalTopics()) == 0 {
		add(FieldApp, "unknown application id %q: the cluster has no group of that name and no internal topics named %q-…-repartition or -changelog; check application_id, or run the app once so that Streams creates them", a.ID, a.ID)
	}
	for _, name := range r.Fixed {
		if t, ok := a.topic(name); !ok || !t.Role.Internal() {
			add(FieldFixed, "fixed_internal_topics lists %q, which is not an internal topic of %q on the cluster (its internal topics: %s); list only topics named %q-…-repartition or -changelog", name, a.ID, strings.Join(a.InternalTopics(), ", "), a.ID)
		}
	}
	if r.Target < 1 {
		add(FieldPartitions, "partitions must be at least 1, got %d", r.Target)
	}
	for _, t := range a.Topics {
		if t.Partitions == 0 && (t.Role == RoleSource || t.Role == RoleSink) {
			f := FieldSources
			if t.Role == RoleSink {
				f = FieldSinks
			}
			add(f, "%s topic %q does not exist", t.Role, t.Name)
		}
	}

	var sinks, together []string
	grows := false
	for _, t := range a.Topics {
		if t.Partitions == 0 || t.Fixed {
			continue
		}
		switch {
		case r.Target < t.Partitions:
			add(FieldPartitions, "partitions = %d is below the %d partitions of %s topic %q: %v, so an app can only grow",
				r.Target, t.Partitions, t.Role, t.Name, CheckNoShrink(t.Name, int(t.Partitions), int(r.Target)))
		case r.Target > t.Partitions && t.Role == RoleSink:
			sinks = append(sinks, t.Name)
			grows = true
		case r.Target > t.Partitions:
			together = append(together, t.Name)
			grows = true
		}
	}
	slices.Sort(sinks)
	slices.Sort(together)
	x.Consumed = map[string]int32{}
	for _, t := range a.Topics {
		if t.Role.Consumed() && t.Partitions > 0 {
			x.Consumed[t.Name] = t.Partitions
			if slices.Contains(together, t.Name) {
				x.Consumed[t.Name] = r.Target
			}
		}
	}

	if p := unevenSources(a, r.Target); grows && p != nil {
		problems = append(problems, p)
	}
	if grows && !r.StaticPartitioning {
		add(FieldStatic, "static_partitioning is false, so the expansion of %q to %d partitions is refused: growing a keyed topic sends existing keys to other partitions, and the app's state stores and joins then no longer see each key in one place. Set static_partitioning = true only if every producer, and every repartition step, keeps each existing key in its partition and sends only new keys to the new partitions (the premise of KIP-878)", a.ID, r.Target)
	}
	problems = append(problems, copartitionProblems(r, together)...)
	for _, p := range crossAppProblems(r, grows) {
		if sp := (*StreamsProblem)(nil); r.DownstreamLater && errors.As(p, &sp) && sp.Downstream {
			x.Warnings = append(x.Warnings, p)
			continue
		}
		problems = append(problems, p)
	}

	if grows && a.Protocol == ProtocolClassic && a.Members > 0 && !r.Quiesce {
		add(FieldQuiesce, "group %q uses the classic rebalance protocol and has %d members: after the topics grow, any rebalance before the group leader's next metadata refresh (metadata.max.age.ms, 5 minutes by default) kills the leader with \"Existing internal topic … has invalid partitions\". Switch the app to group.protocol=streams, stop the app before applying, or give a quiesce block whose commands stop and start it", a.ID, a.Members)
	}
	if len(problems) > 0 {
		return x, &InputError{Problems: problems}
	}
	if !grows {
		// Everything has grown; finish what an interrupted apply left.
		if r.Settled > 0 && r.Settled < r.Target && x.From == r.Target {
			x.From = r.Settled
			if a.Members > 0 {
				x.Steps = append(x.Steps, StreamsStep{Kind: StepAwaitStable, Partitions: r.Target})
			}
			if withNotify {
				x.Steps = append(x.Steps, StreamsStep{Kind: StepNotify, Partitions: r.Target})
			}
		}
		return x, nil
	}

	if len(sinks) > 0 {
		x.Steps = append(x.Steps, StreamsStep{Kind: StepGrowSinks, Topics: sinks, Partitions: r.Target})
	}
	quiesce := r.Quiesce && a.Protocol == ProtocolClassic && a.Members > 0
	if quiesce {
		x.Steps = append(x.Steps, StreamsStep{Kind: StepStopApp}, StreamsStep{Kind: StepAwaitEmpty})
	}
	if len(together) > 0 {
		x.Steps = append(x.Steps, StreamsStep{Kind: StepGrowTogether, Topics: together, Partitions: r.Target, Keep: x.Fixed})
	}
	if quiesce {
		x.Steps = append(x.Steps, StreamsStep{Kind: StepStartApp})
	}
	if a.Members > 0 || quiesce {
		x.Steps = append(x.Steps, StreamsStep{Kind: StepAwaitStable, Partitions: r.Target})
	}
	if withNotify {
		x.Steps = append(x.Steps, StreamsStep{Kind: StepNotify, Partitions: r.Target})
	}
	return x, nil
}

// copartitionProblems finds topics that must end with equal counts but
// would not: a consumed topic left out of the expansion, a subtopology whose
// sources would differ, a changelog that would not match its tasks.
func copartitionProblems(r StreamsExpansionRequest, together []string) []error {
	a := r.App
	var problems []error
	final := func(name string) (int32, bool) {
		t, ok := a.topic(name)
		if !ok {
			return 0, false
		}
		if slices.Contains(together, name) {
			return r.Target, true
		}
		return t.Partitions, true
	}
	for _, c := range a.Consumed {
		t, ok := a.topic(c)
		if !ok {
			problems = append(problems, problem(FieldSources, "co-partitioning: group %q consumes topic %q, which is not in source_topics: it would stay as it is while the app's other sources grow to %d; add it to source_topics", a.ID, c, r.Target))
			continue
		}
		if t.Role == RoleSink {
			problems = append(problems, problem(FieldSinks, "co-partitioning: topic %q is listed in sink_topics, but group %q consumes it; list it in source_topics", c, a.ID))
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
			var parts []string
			for _, n := range slices.Sorted(maps.Keys(counts)) {
				parts = append(parts, fmt.Sprintf("%s at %d", strings.Join(counts[n], ", "), n))
			}
			problems = append(problems, problem(FieldFixed, "co-partitioning: subtopology %s reads %s after the expansion; topics one subtopology reads must keep equal counts, so expand or fix them together", st.ID, strings.Join(parts, " but ")))
		}
		for _, cl := range st.Changelogs {
			if n, ok := final(cl); ok && tasks > 0 && n != tasks {
				problems = append(problems, problem(FieldFixed, "co-partitioning: changelog %q would have %d partitions but its subtopology %s has %d tasks; Streams requires them equal, so fix or expand both", cl, n, st.ID, tasks))
			}
		}
	}
	return problems
}

// crossAppProblems enforces the order across apps: an app that consumes
// this app's sinks is downstream and must be expanded first (its own
// expansion grows those topics with its internal topics), and a source
// another app also consumes cannot grow without that app's internal topics.
func crossAppProblems(r StreamsExpansionRequest, grows bool) []error {
	if !grows {
		return nil
	}
	a := r.App
	var problems []error
	for _, o := range r.Others {
		if o.ID == a.ID {
			continue
		}
		for _, src := range o.TopicsWith(RoleSource) {
			t, ok := a.topic(src)
			if !ok || t.Partitions == 0 || t.Partitions >= r.Target {
				continue
			}
			switch t.Role {
			case RoleSink:
				order, err := OrderStreamsApps([]StreamsApp{a, o})
				how := ""
				if err == nil {
					how = " (order: " + strings.Join(order, ", then ") + ")"
				}
				problems = append(problems, &StreamsProblem{Field: FieldSinks, Downstream: true, Err: fmt.Errorf(
					"sink topic %q is a source of Streams app %q (%s), which is downstream and must be expanded first%s: declare a kafkascale_streams_app for %q with partitions = %d and add it to this resource's depends_on",
					src, o.ID, o.describeState(), how, o.ID, r.Target)})
			case RoleSource:
				problems = append(problems, problem(FieldSources, "co-partitioning: source topic %q is also a source of Streams app %q (%s); growing it without %q's internal topics would stop that app, and kafkascale grows one app's topics per request. Expand the apps' shared sources together in one app's resource only if the other app is stopped, or split the input topic", src, o.ID, o.describeState(), o.ID))
			}
		}
	}
	return problems
}

// unevenSources refuses to grow sources whose counts differ when no
// topology says which of them are co-partitioned: the internal topics'
// counts then cannot be told apart from the sources', and a join over
// sources made equal only now would pair keys that never met.
func unevenSources(a StreamsApp, target int32) error {
	if len(a.Subtopologies) > 0 {
		return nil
	}
	var lo, hi *StreamsTopic
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
	return problem(FieldSources, "the source topics have different partition counts (%s at %d but %s at %d) and no topology "+
		"says which of them the app co-partitions (the group does not use the streams protocol, or is not running), so "+
		"growing them all to %d could mix keys that never met in a join, and the internal topics' counts cannot be matched "+
		"to their sources. Bring the sources to one count first, or run the app with group.protocol=streams so that "+
		"kafkascale reads its topology", lo.Name, lo.Partitions, hi.Name, hi.Partitions, target)
}
