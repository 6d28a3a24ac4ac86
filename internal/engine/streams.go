package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// StreamsExpansionRequest is one app's declared change, and the apps that
// share its sources, grown with it.
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
	// CoExpand are the other apps the user declares grown with App, in
	// the order declared: every Streams app that reads a source any of
	// them grows must be App or one of these. They grow in the same
	// requests, are quiesced in the same window and waited for together.
	CoExpand []StreamsCoApp
	// Others are the other Streams apps on the cluster (live or stopped),
	// for the checks across apps.
	Others []StreamsApp
	// Groups are the plain consumer groups: each one that reads a
	// growing topic is a warning.
	Groups []ConsumerGroup
	// DownstreamLater turns "a downstream app has not grown yet" into a
	// warning: at plan time the downstream app may be expanded earlier in
	// the same apply. At apply time it must be false.
	DownstreamLater bool
	// Settled is the count at which the app (and its co-expanded apps)
	// was last seen stable after an expansion (0: unknown). Below Target
	// with nothing left to grow, an earlier apply stopped before its wait
	// or its notification, and the plan finishes them.
	Settled int32
	// Fixed are the internal topics the user declares fixed; the plan adds
	// those it finds (FixedInternalTopics).
	Fixed []string
}

// StreamsCoApp is an app grown together with the request's app, with its
// own settings.
type StreamsCoApp struct {
	App     StreamsApp
	Quiesce bool
	// Notify is true when the app has an endpoint to call once stable.
	Notify bool
	Fixed  []string
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
	Kind StreamsStepKind
	// App is the app a stop, wait, start or notify step is about, in a
	// plan that grows several apps; empty in a plan for one app.
	App        string `json:",omitempty"`
	Topics     []string
	Partitions int32
	// Keep are the fixed internal topics the grow step leaves alone, named
	// so that the plan shows them.
	Keep []FixedTopic `json:",omitempty"`
}

// String is the line `terraform plan` shows for the step.
func (s StreamsStep) String() string {
	of, group := "", "the group"
	if s.App != "" {
		of, group = " of "+s.App, "group "+s.App
	}
	switch s.Kind {
	case StepGrowSinks:
		return fmt.Sprintf("grow sink topics %s to %d partitions (not consumed by the app: no rebalance)", strings.Join(s.Topics, ", "), s.Partitions)
	case StepStopApp:
		return "run the quiesce stop command" + of
	case StepAwaitEmpty:
		return fmt.Sprintf("wait until %s has no members", group)
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
		return "run the quiesce start command" + of
	case StepAwaitStable:
		return fmt.Sprintf("wait until %s is stable on %d partitions for the quiet period", group, s.Partitions)
	case StepNotify:
		if s.App != "" {
			return fmt.Sprintf("call the on_expansion_url of %s with the old and new counts (%d)", s.App, s.Partitions)
		}
		return fmt.Sprintf("call on_expansion_url with the old and new counts (%d)", s.Partitions)
	}
	return string(s.Kind)
}

// StreamsExpansion is the ordered plan for one app, or for an app and the
// apps that share its sources.
type StreamsExpansion struct {
	App      string
	Protocol StreamsProtocol
	From, To int32
	Steps    []StreamsStep
	// Fixed are the app's internal topics left at their count, with the
	// reason.
	Fixed []FixedTopic
	// Consumed gives every topic the app's tasks read its count after the
	// expansion: what a stable group's assignment must cover.
	Consumed map[string]int32
	// Apps are every app the plan grows, the request's app first, then
	// the co-expanded ones in the order declared.
	Apps []StreamsExpansionApp
	// Warnings are downstream apps that must grow first (with
	// DownstreamLater).
	Warnings []error
	// GroupWarnings name each plain consumer group that reads a topic the
	// plan grows.
	GroupWarnings []string
}

// StreamsExpansionApp is one app of a plan.
type StreamsExpansionApp struct {
	App      string
	Protocol StreamsProtocol
	Members  int
	From     int32
	Fixed    []FixedTopic
	Consumed map[string]int32
	// Topics are the app's topics the plan grows, sorted.
	Topics []string
}

// Lines renders the steps for `terraform plan`, numbered.
func (x StreamsExpansion) Lines() []string {
	out := make([]string, len(x.Steps))
	for i, s := range x.Steps {
		out[i] = fmt.Sprintf("%d. %s", i+1, s)
	}
	return out
}

// FixedNames are the names of the app's fixed internal topics, sorted.
func (x StreamsExpansion) FixedNames() []string { return FixedTopicNames(x.Fixed) }

// Has reports whether the plan contains a step of kind k.
func (x StreamsExpansion) Has(k StreamsStepKind) bool {
	return slices.ContainsFunc(x.Steps, func(s StreamsStep) bool { return s.Kind == k })
}

// For returns the plan of app id (empty: the request's app).
func (x StreamsExpansion) For(id string) (StreamsExpansionApp, bool) {
	if id == "" {
		id = x.App
	}
	for _, a := range x.Apps {
		if a.App == id {
			return a, true
		}
	}
	return StreamsExpansionApp{}, false
}

// AppIDs are the ids of the apps the plan grows, the request's app first.
func (x StreamsExpansion) AppIDs() []string {
	out := make([]string, len(x.Apps))
	for i, a := range x.Apps {
		out[i] = a.App
	}
	return out
}

// bundled is one app of a request, with its settings.
type bundled struct {
	StreamsCoApp
	lead bool
}

// PlanStreamsExpansion turns an app's declared partition count into the
// ordered steps of DESIGN.md section 4: sinks first (no rebalance follows),
// then the sources and internal topics in one request (so the next
// rebalance sees one consistent topology), then wait for stability, then
// notify. With CoExpand, the apps that share sources grow as one: their
// sinks together, every live classic app stopped before one request grows
// every source and internal topic of them all and started after it, then
// each is waited for and notified. Every problem with the request comes
// back at once as an *InputError, before anything would change.
//
// withNotify adds the notify step of the request's app; the caller knows
// whether a URL is set.
func PlanStreamsExpansion(r StreamsExpansionRequest, withNotify bool) (StreamsExpansion, error) {
	apps := []bundled{{StreamsCoApp: StreamsCoApp{App: r.App, Quiesce: r.Quiesce, Notify: withNotify, Fixed: r.Fixed}, lead: true}}
	for _, c := range r.CoExpand {
		apps = append(apps, bundled{StreamsCoApp: c})
	}
	multi := len(apps) > 1
	x := StreamsExpansion{App: r.App.ID, Protocol: r.App.Protocol, From: r.App.Partitions(), To: r.Target}
	var problems []error
	add := func(app string, f StreamsField, format string, args ...any) {
		problems = append(problems, &StreamsProblem{Field: f, App: app, Err: fmt.Errorf(format, args...)})
	}
	// tag names the co-expanded app a problem is about.
	tag := func(b bundled, ps []error) []error {
		for _, p := range ps {
			var sp *StreamsProblem
			if !b.lead && errors.As(p, &sp) {
				sp.App = b.App.ID
			}
		}
		return ps
	}

	seen := map[string]bool{}
	for i := range apps {
		b := &apps[i]
		if seen[b.App.ID] {
			add(b.App.ID, FieldApp, "Streams app %q is declared twice in this expansion; declare each app once", b.App.ID)
		}
		seen[b.App.ID] = true
		fixed := FixedInternalTopics(b.App, b.Fixed, r.Settled, r.Target)
		a := b.App
		a.Topics = slices.Clone(a.Topics)
		for j, t := range a.Topics {
			a.Topics[j].Fixed = slices.ContainsFunc(fixed, func(f FixedTopic) bool { return f.Name == t.Name })
		}
		b.App = a
		x.Apps = append(x.Apps, StreamsExpansionApp{App: a.ID, Protocol: a.Protocol, Members: a.Members, From: a.Partitions(), Fixed: fixed})
	}
	x.Fixed = x.Apps[0].Fixed
	if r.Target < 1 {
		add("", FieldPartitions, "partitions must be at least 1, got %d", r.Target)
	}

	// What each app reads, over the whole bundle: a sink of one app that
	// another app reads grows with the sources, not before them.
	consumedInBundle := map[string]bool{}
	for _, b := range apps {
		for _, t := range b.App.Topics {
			if t.Role.Consumed() {
				consumedInBundle[t.Name] = true
			}
		}
	}
	current := map[string]int32{}
	sinkSet, togetherSet := map[string]bool{}, map[string]bool{}
	for _, b := range apps {
		a := b.App
		id, of := "", ""
		if !b.lead {
			id = a.ID
		}
		if multi {
			of = fmt.Sprintf(" of %q", a.ID)
		}
		if !a.GroupExists && len(a.InternalTopics()) == 0 {
			add(id, FieldApp, "unknown application id %q: the cluster has no group of that name and no internal topics named %q-…-repartition or -changelog; check application_id, or run the app once so that Streams creates them", a.ID, a.ID)
		}
		for _, name := range b.Fixed {
			if t, ok := a.topic(name); !ok || !t.Role.Internal() {
				add(id, FieldFixed, "fixed_internal_topics lists %q, which is not an internal topic of %q on the cluster (its internal topics: %s); list only topics named %q-…-repartition or -changelog", name, a.ID, strings.Join(a.InternalTopics(), ", "), a.ID)
			}
		}
		for _, t := range a.Topics {
			if t.Partitions == 0 && (t.Role == RoleSource || t.Role == RoleSink) {
				f, verb, list := FieldSources, "read", "source_topics"
				if t.Role == RoleSink {
					f, verb, list = FieldSinks, "write to", "sink_topics"
				}
				add(id, f, "%s topic %q%s does not exist: kafkascale grows an app's topics but creates none, and the app could not %s a topic that is not there. "+
					"Create it first, for example with a kafkascale_topic resource that this app refers to (so that Terraform creates it before the app), or correct %s",
					t.Role, t.Name, of, verb, list)
			}
		}
		for _, t := range a.Topics {
			if t.Partitions == 0 || t.Fixed {
				continue
			}
			current[t.Name] = t.Partitions
			switch {
			case r.Target < t.Partitions:
				add(id, FieldPartitions, "partitions = %d is below the %d partitions of %s topic %q%s: %v, so an app can only grow",
					r.Target, t.Partitions, t.Role, t.Name, of, CheckNoShrink(t.Name, int(t.Partitions), int(r.Target)))
			case r.Target > t.Partitions && t.Role == RoleSink && !consumedInBundle[t.Name]:
				sinkSet[t.Name] = true
			case r.Target > t.Partitions:
				togetherSet[t.Name] = true
			}
		}
	}
	sinks := slices.Sorted(maps.Keys(sinkSet))
	together := slices.Sorted(maps.Keys(togetherSet))
	grows := len(sinks)+len(together) > 0

	for i, b := range apps {
		a := b.App
		consumed := map[string]int32{}
		var mine []string
		for _, t := range a.Topics {
			if t.Role.Consumed() && t.Partitions > 0 {
				consumed[t.Name] = t.Partitions
				if togetherSet[t.Name] {
					consumed[t.Name] = r.Target
				}
			}
			if sinkSet[t.Name] || togetherSet[t.Name] {
				mine = append(mine, t.Name)
			}
		}
		slices.Sort(mine)
		x.Apps[i].Consumed, x.Apps[i].Topics = consumed, slices.Compact(mine)
		problems = append(problems, tag(b, copartitionProblems(a, r.Target, together))...)
		if !grows {
			continue
		}
		if p := unevenSources(a, r.Target); p != nil {
			problems = append(problems, tag(b, []error{p})...)
		}
		if a.Protocol == ProtocolClassic && a.Members > 0 && !b.Quiesce {
			id := ""
			if !b.lead {
				id = a.ID
			}
			add(id, FieldQuiesce, "group %q uses the classic rebalance protocol and has %d members: after the topics grow, any rebalance before the group leader's next metadata refresh (metadata.max.age.ms, 5 minutes by default) kills the leader with \"Existing internal topic … has invalid partitions\". Switch the app to group.protocol=streams, stop the app before applying, or give a quiesce block whose commands stop and start it", a.ID, a.Members)
		}
	}
	x.Consumed = x.Apps[0].Consumed
	if grows && !r.StaticPartitioning {
		what := fmt.Sprintf("%q", r.App.ID)
		if multi {
			what = fmt.Sprintf("%q and the apps it co-expands (%s)", r.App.ID, strings.Join(x.AppIDs()[1:], ", "))
		}
		add("", FieldStatic, "static_partitioning is false, so the expansion of %s to %d partitions is refused: growing a keyed topic sends existing keys to other partitions, and the app's state stores and joins then no longer see each key in one place. Set static_partitioning = true only if every producer, and every repartition step, keeps each existing key in its partition and sends only new keys to the new partitions (the premise of KIP-878)", what, r.Target)
	}
	if grows {
		for _, p := range crossAppProblems(r, apps, sinkSet, togetherSet) {
			if sp := (*StreamsProblem)(nil); r.DownstreamLater && errors.As(p, &sp) && sp.Downstream {
				x.Warnings = append(x.Warnings, p)
				continue
			}
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return x, &InputError{Problems: problems}
	}
	appStep := func(k StreamsStepKind, id string, n int32) StreamsStep {
		s := StreamsStep{Kind: k, Partitions: n}
		if multi {
			s.App = id
		}
		return s
	}
	if !grows {
		// Everything has grown; finish what an interrupted apply left.
		if r.Settled > 0 && r.Settled < r.Target && x.From == r.Target {
			x.From = r.Settled
			for i, b := range apps {
				x.Apps[i].From = r.Settled
				if b.App.Members > 0 {
					x.Steps = append(x.Steps, appStep(StepAwaitStable, b.App.ID, r.Target))
				}
			}
			for _, b := range apps {
				if b.Notify {
					x.Steps = append(x.Steps, appStep(StepNotify, b.App.ID, r.Target))
				}
			}
		}
		return x, nil
	}

	var growths []TopicGrowth
	for _, t := range append(slices.Clone(sinks), together...) {
		growths = append(growths, TopicGrowth{Topic: t, From: current[t], To: r.Target})
	}
	x.GroupWarnings = ConsumerGroupWarnings(growths, r.Groups)

	if len(sinks) > 0 {
		x.Steps = append(x.Steps, StreamsStep{Kind: StepGrowSinks, Topics: sinks, Partitions: r.Target})
	}
	var quiesced []string
	for _, b := range apps {
		if b.Quiesce && b.App.Protocol == ProtocolClassic && b.App.Members > 0 {
			quiesced = append(quiesced, b.App.ID)
		}
	}
	for _, id := range quiesced {
		x.Steps = append(x.Steps, appStep(StepStopApp, id, 0))
	}
	for _, id := range quiesced {
		x.Steps = append(x.Steps, appStep(StepAwaitEmpty, id, 0))
	}
	if len(together) > 0 {
		var keep []FixedTopic
		for _, a := range x.Apps {
			keep = append(keep, a.Fixed...)
		}
		slices.SortFunc(keep, func(p, q FixedTopic) int { return strings.Compare(p.Name, q.Name) })
		x.Steps = append(x.Steps, StreamsStep{Kind: StepGrowTogether, Topics: together, Partitions: r.Target, Keep: keep})
	}
	for _, id := range quiesced {
		x.Steps = append(x.Steps, appStep(StepStartApp, id, 0))
	}
	for _, b := range apps {
		if b.App.Members > 0 {
			x.Steps = append(x.Steps, appStep(StepAwaitStable, b.App.ID, r.Target))
		}
	}
	for _, b := range apps {
		if b.Notify {
			x.Steps = append(x.Steps, appStep(StepNotify, b.App.ID, r.Target))
		}
	}
	return x, nil
}

// copartitionProblems finds topics that must end with equal counts but
// would not: a consumed topic left out of the expansion, a subtopology whose
// sources would differ, a changelog that would not match its tasks.
func copartitionProblems(a StreamsApp, target int32, together []string) []error {
	var problems []error
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
			problems = append(problems, problem(FieldSources, "co-partitioning: group %q consumes topic %q, which is not in source_topics: it would stay as it is while the app's other sources grow to %d; add it to source_topics", a.ID, c, target))
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

// crossAppProblems enforces the order across apps, for the apps outside
// the expansion: an app that consumes a sink the expansion grows is
// downstream and must be expanded first (its own expansion grows those
// topics with its internal topics), and an app that reads a source the
// expansion grows must be part of it, declared, so that its other sources
// and internal topics grow in the same request.
func crossAppProblems(r StreamsExpansionRequest, apps []bundled, sinks, together map[string]bool) []error {
	in := map[string]bool{}
	var bundle []StreamsApp
	for _, b := range apps {
		in[b.App.ID] = true
		bundle = append(bundle, b.App)
	}
	var problems []error
	undeclared := map[string][]string{}
	var outsiders []StreamsApp
	for _, o := range sortedApps(r.Others) {
		if in[o.ID] {
			continue
		}
		for _, src := range o.TopicsWith(RoleSource) {
			switch {
			case sinks[src]:
				order, err := OrderStreamsApps(append(slices.Clone(bundle), o))
				how := ""
				if err == nil {
					how = " (order: " + strings.Join(order, ", then ") + ")"
				}
				problems = append(problems, &StreamsProblem{Field: FieldSinks, Downstream: true, Err: fmt.Errorf(
					"sink topic %q is a source of Streams app %q (%s), which is downstream and must be expanded first%s: declare a kafkascale_streams_app for %q with partitions = %d and add it to this resource's depends_on",
					src, o.ID, o.describeState(), how, o.ID, r.Target)})
			case together[src]:
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
	var readers []string
	for _, b := range apps {
		var mine []string
		for _, t := range b.App.Topics {
			if t.Role == RoleSource && together[t.Name] {
				mine = append(mine, t.Name)
			}
		}
		slices.Sort(mine)
		readers = append(readers, fmt.Sprintf("%s (declared) reads %s", b.App.ID, strings.Join(mine, ", ")))
	}
	var blocks []string
	for _, o := range outsiders {
		readers = append(readers, fmt.Sprintf("%s (%s, not declared) reads %s", o.ID, o.describeState(), strings.Join(undeclared[o.ID], ", ")))
		blocks = append(blocks, fmt.Sprintf("co_expand { application_id = %q, source_topics = [%s] }", o.ID, quotedList(o.TopicsWith(RoleSource))))
	}
	problems = append(problems, problem(FieldCoExpand, "co-partitioning: Streams apps this expansion does not declare read the sources it grows, and growing those alone, without each app's other sources and internal topics, stops each app on its next rebalance (or when it starts again). The apps reading the grown sources: %s. Declare every one of them in this resource, so that they grow together in one request: %s",
		strings.Join(readers, "; "), strings.Join(blocks, ", ")))
	return problems
}

func quotedList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
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
