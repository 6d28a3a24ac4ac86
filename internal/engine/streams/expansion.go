package streams

import (
	"fmt"
	"slices"
	"strings"
)

// ExpansionRequest is one app's declared change, and the apps that
// share its sources, grown with it.
type ExpansionRequest struct {
	App App
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
	CoExpand []CoApp
	// Others are the other Streams apps on the cluster (live or stopped),
	// for the checks across apps.
	Others []App
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

// CoApp is an app grown together with the request's app, with its
// own settings.
type CoApp struct {
	App     App
	Quiesce bool
	// Notify is true when the app has an endpoint to call once stable.
	Notify bool
	Fixed  []string
}

// StepKind names one step of an expansion.
type StepKind string

// The steps, in the order they can appear.
const (
	StepGrowSinks    StepKind = "grow-sinks"
	StepStopApp      StepKind = "stop-app"
	StepAwaitEmpty   StepKind = "await-empty-group"
	StepGrowTogether StepKind = "grow-sources-and-internal-topics"
	StepStartApp     StepKind = "start-app"
	StepAwaitStable  StepKind = "await-stable"
	StepNotify       StepKind = "notify"
)

// Step is one step. Grow steps name their topics, which are grown
// in ONE CreatePartitions request.
type Step struct {
	Kind StepKind
	// App is the app a stop, wait, start or notify step is about, in a
	// plan that grows several apps; empty in a plan for one app.
	App        string `json:",omitempty"`
	Topics     []string
	Partitions int32
	// Keep are the fixed internal topics the grow step leaves alone, named
	// so that the plan shows them.
	Keep []FixedTopic `json:",omitempty"`
}

// String describes the step in one line, as a plan lists it.
func (s Step) String() string {
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
			return fmt.Sprintf("call the expansion endpoint of %s with the old and new counts (%d)", s.App, s.Partitions)
		}
		return fmt.Sprintf("call the expansion endpoint with the old and new counts (%d)", s.Partitions)
	}
	return string(s.Kind)
}

// Expansion is the ordered plan for one app, or for an app and the
// apps that share its sources.
type Expansion struct {
	App      string
	Protocol Protocol
	From, To int32
	Steps    []Step
	// Fixed are the app's internal topics left at their count, with the
	// reason.
	Fixed []FixedTopic
	// Consumed gives every topic the app's tasks read its count after the
	// expansion: what a stable group's assignment must cover.
	Consumed map[string]int32
	// Apps are every app the plan grows, the request's app first, then
	// the co-expanded ones in the order declared.
	Apps []ExpansionApp
	// Warnings are downstream apps that must grow first (with
	// DownstreamLater), each a ProblemDownstream.
	Warnings []*Problem
	// GroupWarnings name each plain consumer group that reads a topic the
	// plan grows.
	GroupWarnings []string
}

// ExpansionApp is one app of a plan.
type ExpansionApp struct {
	App      string
	Protocol Protocol
	Members  int
	From     int32
	Fixed    []FixedTopic
	Consumed map[string]int32
	// Topics are the app's topics the plan grows, sorted.
	Topics []string
}

// Lines are the steps, numbered, one line each.
func (x Expansion) Lines() []string {
	out := make([]string, len(x.Steps))
	for i, s := range x.Steps {
		out[i] = fmt.Sprintf("%d. %s", i+1, s)
	}
	return out
}

// FixedNames are the names of the app's fixed internal topics, sorted.
func (x Expansion) FixedNames() []string { return FixedTopicNames(x.Fixed) }

// Has reports whether the plan contains a step of kind k.
func (x Expansion) Has(k StepKind) bool {
	return slices.ContainsFunc(x.Steps, func(s Step) bool { return s.Kind == k })
}

// For returns the plan of app id (empty: the request's app).
func (x Expansion) For(id string) (ExpansionApp, bool) {
	if id == "" {
		id = x.App
	}
	for _, a := range x.Apps {
		if a.App == id {
			return a, true
		}
	}
	return ExpansionApp{}, false
}

// AppIDs are the ids of the apps the plan grows, the request's app first.
func (x Expansion) AppIDs() []string {
	out := make([]string, len(x.Apps))
	for i, a := range x.Apps {
		out[i] = a.App
	}
	return out
}
