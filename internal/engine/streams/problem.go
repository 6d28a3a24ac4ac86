package streams

import (
	"fmt"
	"strings"
)

// Field names the declared setting a problem is about, so that the
// caller can point at its own attribute.
type Field string

// The settings of an ExpansionRequest.
const (
	FieldApp        Field = "application id"
	FieldSources    Field = "source topics"
	FieldSinks      Field = "sink topics"
	FieldPartitions Field = "partition count"
	FieldStatic     Field = "static partitioning"
	FieldQuiesce    Field = "quiesce commands"
	FieldFixed      Field = "fixed internal topics"
	FieldCoExpand   Field = "co-expanded apps"
)

// ProblemKind says what is wrong with an expansion request. Each
// kind fills its own fields of Problem, listed with it.
type ProblemKind string

// The kinds of problem.
const (
	// ProblemDeclaredTwice: Subject appears twice among the apps.
	ProblemDeclaredTwice ProblemKind = "app declared twice"
	// ProblemTargetTooLow: Target is below 1.
	ProblemTargetTooLow ProblemKind = "partition count below 1"
	// ProblemUnknownApp: Subject has no group and no internal topic.
	ProblemUnknownApp ProblemKind = "unknown app"
	// ProblemNotInternal: Topic, declared fixed, is not one of Subject's
	// internal topics, which are Topics.
	ProblemNotInternal ProblemKind = "fixed topic not internal"
	// ProblemMissingTopic: Subject's Topic, in Role, does not exist.
	ProblemMissingTopic ProblemKind = "missing topic"
	// ProblemShrink: Target is below the Partitions of Subject's Topic,
	// in Role; Err is the *engine.ShrinkError.
	ProblemShrink ProblemKind = "partition count below a topic's"
	// ProblemUnlistedSource: Subject's group consumes Topic, which is
	// not among its sources, while the sources grow to Target.
	ProblemUnlistedSource ProblemKind = "consumed topic not a source"
	// ProblemConsumedSink: Subject's group consumes Topic, declared a
	// sink.
	ProblemConsumedSink ProblemKind = "consumed topic declared a sink"
	// ProblemUnequalSubtopology: Subtopology would read topics at
	// different Counts.
	ProblemUnequalSubtopology ProblemKind = "subtopology with unequal counts"
	// ProblemChangelogTasks: changelog Topic would have Partitions, but
	// its Subtopology has Tasks.
	ProblemChangelogTasks ProblemKind = "changelog unequal to its tasks"
	// ProblemUnevenSources: Subject's sources have different Counts (the
	// lowest and the highest) and no topology tells which are
	// co-partitioned; they would grow to Target.
	ProblemUnevenSources ProblemKind = "uneven sources without a topology"
	// ProblemClassicLive: Subject's classic group has Members and no way
	// to stop it.
	ProblemClassicLive ProblemKind = "live classic group without quiesce"
	// ProblemNotStatic: the producers are not declared to partition
	// statically; Subject and the Apps it co-expands would grow to Target.
	ProblemNotStatic ProblemKind = "static partitioning not declared"
	// ProblemDownstream: sink Topic is a source of Readers[0], downstream,
	// which must reach Target first; Order is the downstream-first order
	// (empty when the apps form a cycle).
	ProblemDownstream ProblemKind = "downstream app not grown"
	// ProblemUndeclaredReaders: apps outside the expansion read sources it
	// grows. Readers are every app reading them, the declared ones first.
	ProblemUndeclaredReaders ProblemKind = "undeclared apps read growing sources"
)

// Problem is one reason an expansion is refused, as data: the
// caller words it in its own terms.
type Problem struct {
	Kind  ProblemKind
	Field Field
	// App is the co-expanded app the problem is about; empty for the
	// request's app or the expansion as a whole.
	App string
	// Subject is the app the problem names, the request's app included.
	Subject string
	Topic   string
	Role    TopicRole
	// Partitions is a topic's count, now or after the expansion.
	Partitions int32
	// Target is the partition count the expansion grows to.
	Target      int32
	Members     int
	Subtopology string
	Tasks       int32
	// Topics are further topic names (ProblemNotInternal).
	Topics []string
	// Apps are further app ids (ProblemNotStatic).
	Apps []string
	// Counts group topics by partition count, lowest count first.
	Counts []TopicsAtCount
	// Readers are the apps reading topics the expansion grows.
	Readers []Reader
	// Order is the downstream-first order of the apps (ProblemDownstream).
	Order []string
	// Err is the underlying error, when there is one.
	Err error
}

// TopicsAtCount are topics with one partition count.
type TopicsAtCount struct {
	Topics     []string
	Partitions int32
}

func (c TopicsAtCount) String() string {
	return fmt.Sprintf("%s at %d", strings.Join(c.Topics, ", "), c.Partitions)
}

// Reader is a Streams app that reads sources an expansion grows.
type Reader struct {
	App      string
	Protocol Protocol
	Members  int
	// Declared is true when the expansion grows the app too.
	Declared bool
	// Reads are the grown sources it reads, sorted.
	Reads []string
	// Sources are all its sources, sorted: what declaring it lists.
	Sources []string
}

// State says the app's protocol and whether it runs: "streams protocol,
// 2 member(s)", "classic protocol, stopped".
func (r Reader) State() string {
	protocol := r.Protocol
	if protocol == ProtocolNone {
		protocol = ProtocolClassic
	}
	if r.Members == 0 {
		return string(protocol) + " protocol, stopped"
	}
	return fmt.Sprintf("%s protocol, %d member(s)", protocol, r.Members)
}

// String is "shop (declared) reads orders" or "audit (classic protocol,
// stopped, not declared) reads orders".
func (r Reader) String() string {
	if r.Declared {
		return fmt.Sprintf("%s (declared) reads %s", r.App, strings.Join(r.Reads, ", "))
	}
	return fmt.Sprintf("%s (%s, not declared) reads %s", r.App, r.State(), strings.Join(r.Reads, ", "))
}

func readerOf(a App, declared bool, reads []string) Reader {
	return Reader{App: a.ID, Protocol: a.Protocol, Members: a.Members, Declared: declared, Reads: reads, Sources: a.TopicsWith(RoleSource)}
}

// Error says the kind of problem and what it names, in the domain's words;
// a caller that knows its own setting names words it fully.
func (p *Problem) Error() string {
	s := fmt.Sprintf("Streams app %q: %s", p.Subject, p.Kind)
	if p.Subject == "" {
		s = "Streams expansion: " + string(p.Kind)
	}
	if p.Topic != "" {
		s += fmt.Sprintf(" (topic %q)", p.Topic)
	}
	if len(p.Readers) > 0 {
		rs := make([]string, len(p.Readers))
		for i, r := range p.Readers {
			rs[i] = r.String()
		}
		s += ": " + strings.Join(rs, "; ")
	}
	if p.Err != nil {
		s += ": " + p.Err.Error()
	}
	return s
}

func (p *Problem) Unwrap() error { return p.Err }
