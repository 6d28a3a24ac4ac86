package provider

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// streamsFieldAttr is the attribute of kafkascale_streams_app each setting
// of an expansion request comes from.
var streamsFieldAttr = map[streams.Field]string{
	streams.FieldApp:        "application_id",
	streams.FieldSources:    "source_topics",
	streams.FieldSinks:      "sink_topics",
	streams.FieldPartitions: "partitions",
	streams.FieldStatic:     "static_partitioning",
	streams.FieldQuiesce:    "quiesce",
	streams.FieldFixed:      "fixed_internal_topics",
	streams.FieldCoExpand:   "co_expand",
}

// streamsProblemPath is the attribute a problem is about: the resource's
// own, or, for a co-expanded app, the one of its co_expand block (co are
// their ids, in order).
func streamsProblemPath(p *streams.Problem, co []string) path.Path {
	name := streamsFieldAttr[p.Field]
	i := slices.Index(co, p.App)
	if p.App == "" || i < 0 {
		return path.Root(name)
	}
	if p.Field == streams.FieldPartitions {
		name = "application_id" // the block has no count of its own
	}
	return path.Root("co_expand").AtListIndex(i).AtName(name)
}

// streamsPlanDiagnostics turns the engine's refusal into one diagnostic per
// problem, on the attribute the problem is about.
//
// co are the co_expand apps' ids, in order: a problem about one of them
// lands on its block.
func streamsPlanDiagnostics(app string, co []string, err error) diag.Diagnostics {
	var diags diag.Diagnostics
	var ie *engine.InputError
	if !errors.As(err, &ie) {
		diags.AddError("Cannot plan the Streams expansion", fmt.Sprintf("Planning the expansion of %s failed: %v. %s", app, err, bugReport))
		return diags
	}
	for _, p := range ie.Problems {
		at, detail := path.Root("partitions"), p.Error()
		var sp *streams.Problem
		if errors.As(p, &sp) {
			at, detail = streamsProblemPath(sp, co), streamsProblemDetail(sp, len(co) > 0)
		}
		diags.AddAttributeError(at, "Streams expansion refused",
			fmt.Sprintf("Streams app %s: %s.\n\nNothing was changed on the cluster.", app, detail))
	}
	return diags
}

// streamsDownstreamWarning is the plan's warning for a downstream app
// that has not grown yet: the apply refuses unless it grows first.
func streamsDownstreamWarning(app string, multi bool, p *streams.Problem, diags *diag.Diagnostics) {
	diags.AddAttributeWarning(path.Root("sink_topics"), "Downstream Streams app must grow first",
		fmt.Sprintf("Streams app %s: %s.\n\nThe apply checks again before it changes anything, and stops if the "+
			"downstream app has not grown by then.", app, streamsProblemDetail(p, multi)))
}

// streamsProblemDetail words a problem in the resource's terms: its
// attribute names, and the HCL that fixes it. multi is true when the
// resource co-expands apps, whose topics are then named with their app.
func streamsProblemDetail(p *streams.Problem, multi bool) string {
	of := ""
	if multi {
		of = fmt.Sprintf(" of %q", p.Subject)
	}
	switch p.Kind {
	case streams.ProblemDeclaredTwice:
		return fmt.Sprintf("Streams app %q is declared twice in this expansion; declare each app once", p.Subject)
	case streams.ProblemTargetTooLow:
		return fmt.Sprintf("partitions must be at least 1, got %d", p.Target)
	case streams.ProblemUnknownApp:
		return fmt.Sprintf("unknown application id %q: the cluster has no group of that name and no internal topics named "+
			"%q-…-repartition or -changelog; check application_id, or run the app once so that Streams creates them", p.Subject, p.Subject)
	case streams.ProblemNotInternal:
		return fmt.Sprintf("fixed_internal_topics lists %q, which is not an internal topic of %q on the cluster (its internal "+
			"topics: %s); list only topics named %q-…-repartition or -changelog", p.Topic, p.Subject, strings.Join(p.Topics, ", "), p.Subject)
	case streams.ProblemMissingTopic:
		verb, list := "read", "source_topics"
		if p.Role == streams.RoleSink {
			verb, list = "write to", "sink_topics"
		}
		return fmt.Sprintf("%s topic %q%s does not exist: kafkascale grows an app's topics but creates none, and the app could "+
			"not %s a topic that is not there. Create it first, for example with a kafkascale_topic resource that this app "+
			"refers to (so that Terraform creates it before the app), or correct %s", p.Role, p.Topic, of, verb, list)
	case streams.ProblemShrink:
		return fmt.Sprintf("partitions = %d is below the %d partitions of %s topic %q%s: %s, so an app can only grow",
			p.Target, p.Partitions, p.Role, p.Topic, of, engine.NoShrinkRule)
	case streams.ProblemUnlistedSource:
		return fmt.Sprintf("co-partitioning: group %q consumes topic %q, which is not in source_topics: it would stay as it is "+
			"while the app's other sources grow to %d; add it to source_topics", p.Subject, p.Topic, p.Target)
	case streams.ProblemConsumedSink:
		return fmt.Sprintf("co-partitioning: topic %q is listed in sink_topics, but group %q consumes it; list it in source_topics", p.Topic, p.Subject)
	case streams.ProblemUnequalSubtopology:
		parts := make([]string, len(p.Counts))
		for i, c := range p.Counts {
			parts[i] = c.String()
		}
		return fmt.Sprintf("co-partitioning: subtopology %s reads %s after the expansion; topics one subtopology reads must "+
			"keep equal counts, so expand or fix them together", p.Subtopology, strings.Join(parts, " but "))
	case streams.ProblemChangelogTasks:
		return fmt.Sprintf("co-partitioning: changelog %q would have %d partitions but its subtopology %s has %d tasks; Streams "+
			"requires them equal, so fix or expand both", p.Topic, p.Partitions, p.Subtopology, p.Tasks)
	case streams.ProblemUnevenSources:
		return unevenSourcesDetail(p)
	case streams.ProblemClassicLive:
		return fmt.Sprintf("group %q uses the classic rebalance protocol and has %d members: after the topics grow, any "+
			"rebalance before the group leader's next metadata refresh (metadata.max.age.ms, 5 minutes by default) kills the "+
			"leader with \"Existing internal topic … has invalid partitions\". Switch the app to group.protocol=streams, stop "+
			"the app before applying, or give a quiesce block whose commands stop and start it", p.Subject, p.Members)
	case streams.ProblemNotStatic:
		return notStaticDetail(p)
	case streams.ProblemDownstream:
		return downstreamDetail(p)
	case streams.ProblemUndeclaredReaders:
		return undeclaredReadersDetail(p)
	}
	return p.Error()
}

func unevenSourcesDetail(p *streams.Problem) string {
	lo, hi := p.Counts[0], p.Counts[len(p.Counts)-1]
	return fmt.Sprintf("the source topics have different partition counts (%s but %s) and no topology says which of them "+
		"the app co-partitions (the group does not use the streams protocol, or is not running), so growing them all to %d "+
		"could mix keys that never met in a join, and the internal topics' counts cannot be matched to their sources. "+
		"Bring the sources to one count first, or run the app with group.protocol=streams so that kafkascale reads its "+
		"topology", lo, hi, p.Target)
}

func notStaticDetail(p *streams.Problem) string {
	what := fmt.Sprintf("%q", p.Subject)
	if len(p.Apps) > 0 {
		what = fmt.Sprintf("%q and the apps it co-expands (%s)", p.Subject, strings.Join(p.Apps, ", "))
	}
	return fmt.Sprintf("static_partitioning is false, so the expansion of %s to %d partitions is refused: growing a keyed "+
		"topic sends existing keys to other partitions, and the app's state stores and joins then no longer see each key in "+
		"one place. Set static_partitioning = true only if every producer, and every repartition step, keeps each existing "+
		"key in its partition and sends only new keys to the new partitions (the premise of KIP-878)", what, p.Target)
}

func downstreamDetail(p *streams.Problem) string {
	d := p.Readers[0]
	how := ""
	if len(p.Order) > 0 {
		how = " (order: " + strings.Join(p.Order, ", then ") + ")"
	}
	return fmt.Sprintf("sink topic %q is a source of Streams app %q (%s), which is downstream and must be expanded first%s: "+
		"declare a kafkascale_streams_app for %q with partitions = %d and add it to this resource's depends_on",
		p.Topic, d.App, d.State(), how, d.App, p.Target)
}

func undeclaredReadersDetail(p *streams.Problem) string {
	readers := make([]string, len(p.Readers))
	var blocks []string
	for i, r := range p.Readers {
		readers[i] = r.String()
		if !r.Declared {
			blocks = append(blocks, fmt.Sprintf("co_expand { application_id = %q, source_topics = [%s] }", r.App, quoted(r.Sources)))
		}
	}
	return fmt.Sprintf("co-partitioning: Streams apps this expansion does not declare read the sources it grows, and growing "+
		"those alone, without each app's other sources and internal topics, stops each app on its next rebalance (or when it "+
		"starts again). The apps reading the grown sources: %s. Declare every one of them in this resource, so that they grow "+
		"together in one request: %s", strings.Join(readers, "; "), strings.Join(blocks, ", "))
}

// streamsStepLine is the line a plan shows for a step: the engine's, with
// the endpoint named by its attribute.
func streamsStepLine(s streams.Step) string {
	if s.Kind != streams.StepNotify {
		return s.String()
	}
	if s.App != "" {
		return fmt.Sprintf("call the on_expansion_url of %s with the old and new counts (%d)", s.App, s.Partitions)
	}
	return fmt.Sprintf("call on_expansion_url with the old and new counts (%d)", s.Partitions)
}

// streamsPlanLines are the steps of x, numbered, as expansion_order and
// the plan's warning show them.
func streamsPlanLines(steps []streams.Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = fmt.Sprintf("%d. %s", i+1, streamsStepLine(s))
	}
	return out
}
