package streams

import (
	"reflect"
	"regexp"
	"slices"
	"testing"
)

// orderApp is the fixture's app: orders and customers joined, re-keyed
// through a repartition topic, counted, written to enriched and counts.
func orderApp(n int32, protocol Protocol, members int) App {
	return App{
		ID:          "shop",
		GroupExists: true,
		Protocol:    protocol,
		Members:     members,
		Topics: []Topic{
			{Name: "orders", Role: RoleSource, Partitions: n},
			{Name: "customers", Role: RoleSource, Partitions: n},
			{Name: "enriched", Role: RoleSink, Partitions: n},
			{Name: "counts", Role: RoleSink, Partitions: n},
			{Name: "shop-byproduct-repartition", Role: RoleRepartition, Partitions: n},
			{Name: "shop-counts-store-changelog", Role: RoleChangelog, Partitions: n},
			{Name: "shop-customers-store-changelog", Role: RoleChangelog, Partitions: n},
		},
	}
}

func TestPlanStreamsExpansionOrdersSinksFirstThenEverythingElseInOneStep(t *testing.T) {
	x, err := PlanExpansion(ExpansionRequest{App: orderApp(4, ProtocolStreams, 2), Target: 8, StaticPartitioning: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{
		{Kind: StepGrowSinks, Topics: []string{"counts", "enriched"}, Partitions: 8},
		{Kind: StepGrowTogether, Topics: []string{"customers", "orders", "shop-byproduct-repartition", "shop-counts-store-changelog", "shop-customers-store-changelog"}, Partitions: 8},
		{Kind: StepAwaitStable, Partitions: 8},
		{Kind: StepNotify, Partitions: 8},
	}
	if !slices.EqualFunc(x.Steps, want, func(a, b Step) bool {
		return a.Kind == b.Kind && a.Partitions == b.Partitions && slices.Equal(a.Topics, b.Topics)
	}) {
		t.Fatalf("steps:\n%v\nwant:\n%v", x.Lines(), want)
	}
	if x.From != 4 || x.To != 8 {
		t.Errorf("from %d to %d, want 4 to 8", x.From, x.To)
	}
}

func TestPlanStreamsExpansionSkipsWhatIsAlreadyGrown(t *testing.T) {
	// An interrupted apply grew the sinks; the next one must not repeat them.
	a := orderApp(4, ProtocolStreams, 1)
	for i := range a.Topics {
		if a.Topics[i].Role == RoleSink {
			a.Topics[i].Partitions = 8
		}
	}
	x, err := PlanExpansion(ExpansionRequest{App: a, Target: 8, StaticPartitioning: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	if x.Has(StepGrowSinks) || !x.Has(StepGrowTogether) || x.Steps[0].Kind != StepGrowTogether {
		t.Fatalf("steps %v: want no sink step, the sources first", x.Lines())
	}
	// Nothing left to grow: no steps at all.
	x, err = PlanExpansion(ExpansionRequest{App: orderApp(8, ProtocolStreams, 1), Target: 8, StaticPartitioning: false}, true)
	if err != nil || len(x.Steps) != 0 {
		t.Fatalf("no-op plan: steps %v, err %v", x.Lines(), err)
	}
}

func TestPlanStreamsExpansionQuiescesALiveClassicGroup(t *testing.T) {
	x, err := PlanExpansion(ExpansionRequest{App: orderApp(4, ProtocolClassic, 1), Target: 8, StaticPartitioning: true, Quiesce: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []StepKind
	for _, s := range x.Steps {
		kinds = append(kinds, s.Kind)
	}
	want := []StepKind{StepGrowSinks, StepStopApp, StepAwaitEmpty, StepGrowTogether, StepStartApp, StepAwaitStable}
	if !slices.Equal(kinds, want) {
		t.Fatalf("steps %v, want %v", kinds, want)
	}
	// A stopped classic app needs no hook and has nothing to wait for.
	x, err = PlanExpansion(ExpansionRequest{App: orderApp(4, ProtocolClassic, 0), Target: 8, StaticPartitioning: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	if x.Has(StepStopApp) || x.Has(StepAwaitStable) {
		t.Fatalf("stopped app: steps %v", x.Lines())
	}
}

func TestPlanStreamsExpansionRefusesBadInput(t *testing.T) {
	unknown := App{ID: "nope", Topics: []Topic{{Name: "orders", Role: RoleSource, Partitions: 4}}}
	missing := orderApp(4, ProtocolStreams, 1)
	missing.Topics = append(missing.Topics, Topic{Name: "payments", Role: RoleSource})
	missingSink := orderApp(4, ProtocolStreams, 1)
	missingSink.Topics = append(missingSink.Topics, Topic{Name: "receipts", Role: RoleSink})
	unlisted := orderApp(4, ProtocolStreams, 1)
	unlisted.Consumed = []string{"orders", "customers", "returns"}
	split := orderApp(4, ProtocolStreams, 1)
	// The repartition topic stays at 4 …
	split.Subtopologies = []Subtopology{
		{ID: "0", Sources: []string{"orders", "customers"}, Changelogs: []string{"shop-customers-store-changelog"}},
		{ID: "1", Sources: []string{"shop-byproduct-repartition"}, Changelogs: []string{"shop-counts-store-changelog"}},
	} // … but its subtopology's changelog would grow to 8
	downstream := App{ID: "billing", GroupExists: true, Topics: []Topic{{Name: "enriched", Role: RoleSource, Partitions: 4}}}
	sibling := App{ID: "audit", GroupExists: true, Topics: []Topic{{Name: "orders", Role: RoleSource, Partitions: 4}}}
	uneven := orderApp(4, ProtocolClassic, 0)
	uneven.Topics[1].Partitions = 6 // customers

	for _, tc := range []struct {
		name string
		r    ExpansionRequest
		want Problem
	}{
		{"unknown app", ExpansionRequest{App: unknown, Target: 8, StaticPartitioning: true},
			Problem{Kind: ProblemUnknownApp, Field: FieldApp, Subject: "nope"}},
		{"missing source", ExpansionRequest{App: missing, Target: 8, StaticPartitioning: true},
			Problem{Kind: ProblemMissingTopic, Field: FieldSources, Subject: "shop", Topic: "payments", Role: RoleSource}},
		{"missing sink", ExpansionRequest{App: missingSink, Target: 8, StaticPartitioning: true},
			Problem{Kind: ProblemMissingTopic, Field: FieldSinks, Subject: "shop", Topic: "receipts", Role: RoleSink}},
		{"decrease", ExpansionRequest{App: orderApp(8, ProtocolStreams, 1), Target: 4, StaticPartitioning: true},
			Problem{Kind: ProblemShrink, Field: FieldPartitions, Subject: "shop", Topic: "orders", Role: RoleSource, Partitions: 8, Target: 4}},
		{"not static", ExpansionRequest{App: orderApp(4, ProtocolStreams, 1), Target: 8},
			Problem{Kind: ProblemNotStatic, Field: FieldStatic, Subject: "shop", Target: 8}},
		{"classic without hook", ExpansionRequest{App: orderApp(4, ProtocolClassic, 2), Target: 8, StaticPartitioning: true},
			Problem{Kind: ProblemClassicLive, Field: FieldQuiesce, Subject: "shop", Members: 2}},
		{"unlisted source", ExpansionRequest{App: unlisted, Target: 8, StaticPartitioning: true},
			Problem{Kind: ProblemUnlistedSource, Field: FieldSources, Subject: "shop", Topic: "returns", Target: 8}},
		{"changelog against tasks", ExpansionRequest{App: split, Target: 8, StaticPartitioning: true, Fixed: []string{"shop-byproduct-repartition"}},
			Problem{Kind: ProblemChangelogTasks, Field: FieldFixed, Subject: "shop", Topic: "shop-counts-store-changelog", Partitions: 8, Subtopology: "1", Tasks: 4}},
		{"downstream first", ExpansionRequest{App: orderApp(4, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, Others: []App{downstream}},
			Problem{Kind: ProblemDownstream, Field: FieldSinks, Subject: "shop", Topic: "enriched", Target: 8, Order: []string{"billing", "shop"},
				Readers: []Reader{{App: "billing", Reads: []string{"enriched"}, Sources: []string{"enriched"}}}}},
		{"uneven sources, no topology", ExpansionRequest{App: uneven, Target: 8, StaticPartitioning: true},
			Problem{Kind: ProblemUnevenSources, Field: FieldSources, Subject: "shop", Target: 8,
				Counts: []TopicsAtCount{{Topics: []string{"orders"}, Partitions: 4}, {Topics: []string{"customers"}, Partitions: 6}}}},
		{"shared source", ExpansionRequest{App: orderApp(4, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, Others: []App{sibling}},
			Problem{Kind: ProblemUndeclaredReaders, Field: FieldCoExpand, Subject: "shop", Readers: []Reader{
				{App: "shop", Protocol: ProtocolStreams, Members: 1, Declared: true, Reads: []string{"customers", "orders"}, Sources: []string{"customers", "orders"}},
				{App: "audit", Reads: []string{"orders"}, Sources: []string{"orders"}},
			}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := PlanExpansion(tc.r, true)
			requireProblem(t, err, tc.want)
			if len(x.Steps) != 0 {
				t.Fatalf("a refused plan has steps %v", x.Lines())
			}
		})
	}
}

func TestPlanStreamsExpansionAcceptsADownstreamAppAlreadyExpanded(t *testing.T) {
	a := orderApp(4, ProtocolStreams, 1)
	for i := range a.Topics {
		if a.Topics[i].Name == "enriched" {
			a.Topics[i].Partitions = 8 // billing's expansion grew it with billing's internal topics
		}
	}
	billing := App{ID: "billing", GroupExists: true, Topics: []Topic{{Name: "enriched", Role: RoleSource, Partitions: 8}}}
	x, err := PlanExpansion(ExpansionRequest{App: a, Target: 8, StaticPartitioning: true, Others: []App{billing}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if x.Steps[0].Kind != StepGrowSinks || !slices.Equal(x.Steps[0].Topics, []string{"counts"}) {
		t.Fatalf("steps %v: want the sink step to grow counts only", x.Lines())
	}
}

func TestPlanStreamsExpansionWarnsAtPlanTimeOfADownstreamAppNotGrownYet(t *testing.T) {
	// At plan time the downstream app's own resource may grow it earlier in
	// the same apply (depends_on); the apply checks again.
	billing := App{ID: "billing", GroupExists: true, Topics: []Topic{{Name: "enriched", Role: RoleSource, Partitions: 4}}}
	x, err := PlanExpansion(ExpansionRequest{App: orderApp(4, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, Others: []App{billing}, DownstreamLater: true}, false)
	if err != nil || len(x.Warnings) != 1 || !x.Has(StepGrowSinks) {
		t.Fatalf("err %v, warnings %v, steps %v: want one warning and a plan", err, x.Warnings, x.Lines())
	}
}

func TestOrderStreamsAppsPutsDownstreamFirst(t *testing.T) {
	app := func(id string, sources, sinks []string) App {
		a := App{ID: id}
		for _, s := range sources {
			a.Topics = append(a.Topics, Topic{Name: s, Role: RoleSource, Partitions: 4})
		}
		for _, s := range sinks {
			a.Topics = append(a.Topics, Topic{Name: s, Role: RoleSink, Partitions: 4})
		}
		return a
	}
	ingest := app("ingest", []string{"raw"}, []string{"clean"})
	enrich := app("enrich", []string{"clean"}, []string{"enriched"})
	report := app("report", []string{"enriched"}, nil)
	audit := app("audit", []string{"clean"}, nil)
	got, err := OrderApps([]App{ingest, enrich, report, audit})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"audit", "report", "enrich", "ingest"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	loop := app("loop", []string{"enriched"}, []string{"raw"})
	if _, err := OrderApps([]App{ingest, enrich, report, loop}); err == nil || !regexp.MustCompile(`cycle \(.*→.*\)`).MatchString(err.Error()) {
		t.Fatalf("a cycle gave err %v", err)
	}
}

func TestInternalTopicRole(t *testing.T) {
	others := []string{"billing-eu"}
	for _, tc := range []struct {
		topic string
		role  TopicRole
		ok    bool
	}{
		{"billing-byproduct-repartition", RoleRepartition, true},
		{"billing-counts-store-changelog", RoleChangelog, true},
		{"billing-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic", RoleForeignKey, true},
		{"billing-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000008-topic", RoleForeignKey, true},
		{"billing-eu-counts-store-changelog", "", false}, // billing-eu's
		{"billing-invoices", "", false},
		{"orders-repartition", "", false},
	} {
		role, ok := InternalTopicRole("billing", tc.topic, others)
		if role != tc.role || ok != tc.ok {
			t.Errorf("%s: %q %v, want %q %v", tc.topic, role, ok, tc.role, tc.ok)
		}
	}
}

func TestPlanStreamsExpansionFinishesAnInterruptedApply(t *testing.T) {
	// The topics grew to 8, but the apply stopped before the app was seen
	// stable and the endpoint called: the next plan does only those.
	x, err := PlanExpansion(ExpansionRequest{App: orderApp(8, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, Settled: 4}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Steps) != 2 || x.Steps[0].Kind != StepAwaitStable || x.Steps[1].Kind != StepNotify || x.From != 4 {
		t.Fatalf("steps %v from %d, want await-stable and notify from 4", x.Lines(), x.From)
	}
}

func TestStreamsProblemsNameTheSetting(t *testing.T) {
	_, err := PlanExpansion(ExpansionRequest{App: orderApp(8, ProtocolStreams, 1), Target: 4}, false)
	requireProblem(t, err, Problem{Kind: ProblemShrink, Field: FieldPartitions})
}

// Sources of different counts are refused only when no topology says
// which of them are co-partitioned.
func TestUnevenSourcesNeedsNoTopology(t *testing.T) {
	a := orderApp(4, ProtocolStreams, 1)
	a.Topics[1].Partitions = 6
	if p := unevenSources(a, 8); p == nil {
		t.Fatal("uneven sources without a topology passed")
	}
	a.Subtopologies = []Subtopology{{ID: "0", Sources: []string{"orders"}}, {ID: "1", Sources: []string{"customers"}}}
	if p := unevenSources(a, 8); p != nil {
		t.Fatalf("uneven sources with a topology refused: %v", p)
	}
	if p := unevenSources(orderApp(4, ProtocolClassic, 0), 8); p != nil {
		t.Fatalf("even sources refused: %v", p)
	}
}

// A stopped classic app (no member; known from its committed offsets and
// its internal topics) takes part in the checks across apps like a live
// one: it would fail the same way when it starts again.
func TestPlanStreamsExpansionSeesStoppedApps(t *testing.T) {
	stopped := func(id string, sources ...string) App {
		a := App{ID: id, GroupExists: true, Protocol: ProtocolClassic, Consumed: sources}
		for _, s := range sources {
			a.Topics = append(a.Topics, Topic{Name: s, Role: RoleSource, Partitions: 4})
		}
		a.Topics = append(a.Topics, Topic{Name: id + "-store-changelog", Role: RoleChangelog, Partitions: 4})
		return a
	}
	fraud := Reader{App: "fraud", Protocol: ProtocolClassic, Reads: []string{"orders"}, Sources: []string{"orders"}}
	billing := Reader{App: "billing", Protocol: ProtocolClassic, Reads: []string{"enriched"}, Sources: []string{"enriched"}}
	for _, tc := range []struct {
		name  string
		other App
		want  Problem
	}{
		{"shared source", stopped("fraud", "orders"), Problem{Kind: ProblemUndeclaredReaders, Field: FieldCoExpand}},
		{"downstream", stopped("billing", "enriched"), Problem{Kind: ProblemDownstream, Field: FieldSinks, Topic: "enriched", Readers: []Reader{billing}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanExpansion(ExpansionRequest{App: orderApp(4, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, Others: []App{tc.other}}, false)
			p := requireProblem(t, err, tc.want)
			if tc.want.Kind == ProblemUndeclaredReaders && !slices.ContainsFunc(p.Readers, func(r Reader) bool { return reflect.DeepEqual(r, fraud) }) {
				t.Errorf("readers %+v, want the stopped fraud among them", p.Readers)
			}
		})
	}
	// The app itself, stopped: its committed offsets tell what it reads,
	// and a topic missing from its sources is refused.
	self := orderApp(4, ProtocolClassic, 0)
	self.Consumed = []string{"customers", "orders", "returns"}
	_, err := PlanExpansion(ExpansionRequest{App: self, Target: 8, StaticPartitioning: true}, false)
	requireProblem(t, err, Problem{Kind: ProblemUnlistedSource, Field: FieldSources, Subject: "shop", Topic: "returns"})
}
