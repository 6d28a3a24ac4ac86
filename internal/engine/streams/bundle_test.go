package streams

import (
	"slices"
	"strings"
	"testing"
)

// fraudApp shares orders with the fixture's shop app, reads payments too,
// re-keys by card and writes alerts.
func fraudApp(n int32, protocol Protocol, members int) App {
	return App{
		ID: "fraud", GroupExists: true, Protocol: protocol, Members: members,
		Consumed: []string{"orders", "payments"},
		Topics: []Topic{
			{Name: "orders", Role: RoleSource, Partitions: n},
			{Name: "payments", Role: RoleSource, Partitions: n},
			{Name: "alerts", Role: RoleSink, Partitions: n},
			{Name: "fraud-bycard-repartition", Role: RoleRepartition, Partitions: n},
			{Name: "fraud-score-store-changelog", Role: RoleChangelog, Partitions: n},
		},
	}
}

func stepLines(x Expansion) string { return strings.Join(x.Lines(), "\n") }

func TestPlanStreamsBundleGrowsEveryAppsTopicsInOneRequestWithOneQuiesceWindow(t *testing.T) {
	shop := orderApp(4, ProtocolStreams, 2)
	shop.Consumed = []string{"customers", "orders"}
	r := ExpansionRequest{
		App: shop, Target: 8, StaticPartitioning: true,
		CoExpand: []CoApp{{App: fraudApp(4, ProtocolClassic, 2), Quiesce: true, Notify: true}},
		Groups:   []ConsumerGroup{{ID: "audit", Members: 1, Topics: []string{"orders"}}, {ID: "unrelated", Topics: []string{"other"}}},
	}
	x, err := PlanExpansion(r, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{
		{Kind: StepGrowSinks, Topics: []string{"alerts", "counts", "enriched"}, Partitions: 8},
		{Kind: StepStopApp, App: "fraud"},
		{Kind: StepAwaitEmpty, App: "fraud"},
		{Kind: StepGrowTogether, Topics: []string{"customers", "fraud-bycard-repartition", "fraud-score-store-changelog", "orders", "payments",
			"shop-byproduct-repartition", "shop-counts-store-changelog", "shop-customers-store-changelog"}, Partitions: 8},
		{Kind: StepStartApp, App: "fraud"},
		{Kind: StepAwaitStable, App: "shop", Partitions: 8},
		{Kind: StepAwaitStable, App: "fraud", Partitions: 8},
		{Kind: StepNotify, App: "shop", Partitions: 8},
		{Kind: StepNotify, App: "fraud", Partitions: 8},
	}
	if !slices.EqualFunc(x.Steps, want, func(a, b Step) bool {
		return a.Kind == b.Kind && a.App == b.App && a.Partitions == b.Partitions && slices.Equal(a.Topics, b.Topics)
	}) {
		t.Fatalf("steps:\n%s\nwant:\n%v", stepLines(x), want)
	}
	for _, line := range []string{"2. run the quiesce stop command of fraud", "3. wait until group fraud has no members",
		"7. wait until group fraud is stable on 8 partitions", "9. call the expansion endpoint of fraud"} {
		if !strings.Contains(stepLines(x), line) {
			t.Errorf("plan lines lack %q:\n%s", line, stepLines(x))
		}
	}
	f, ok := x.For("fraud")
	if !ok || f.From != 4 || f.Consumed["orders"] != 8 || f.Consumed["payments"] != 8 || f.Consumed["fraud-bycard-repartition"] != 8 ||
		!slices.Equal(f.Topics, []string{"alerts", "fraud-bycard-repartition", "fraud-score-store-changelog", "orders", "payments"}) {
		t.Errorf("fraud's part: %+v", f)
	}
	if s, _ := x.For(""); s.App != "shop" || s.Consumed["customers"] != 8 {
		t.Errorf("shop's part: %+v", s)
	}
	if len(x.GroupWarnings) != 1 || !strings.Contains(x.GroupWarnings[0], `Consumer group "audit" reads topic "orders"`) {
		t.Errorf("group warnings %q, want one for audit on orders", x.GroupWarnings)
	}
}

func TestPlanStreamsBundleGrowsAStoppedAppWithNothingToWaitFor(t *testing.T) {
	x, err := PlanExpansion(ExpansionRequest{
		App: orderApp(4, ProtocolStreams, 1), Target: 8, StaticPartitioning: true,
		CoExpand: []CoApp{{App: fraudApp(4, ProtocolClassic, 0)}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range x.Steps {
		if s.App == "fraud" {
			t.Fatalf("a stopped app got step %q:\n%s", s, stepLines(x))
		}
	}
	if !slices.Contains(x.Steps[1].Topics, "fraud-score-store-changelog") || !slices.Contains(x.Steps[1].Topics, "payments") {
		t.Fatalf("the stopped app's topics do not grow with the rest:\n%s", stepLines(x))
	}
}

// A sink of one app in the bundle that another app reads grows with the
// sources, in the one request, not before them.
func TestPlanStreamsBundleGrowsASinkAnotherAppReadsWithTheSources(t *testing.T) {
	fraud := fraudApp(4, ProtocolStreams, 1)
	fraud.Topics = append(fraud.Topics, Topic{Name: "enriched", Role: RoleSource, Partitions: 4})
	x, err := PlanExpansion(ExpansionRequest{
		App: orderApp(4, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, CoExpand: []CoApp{{App: fraud}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(x.Steps[0].Topics, "enriched") || !slices.Contains(x.Steps[1].Topics, "enriched") {
		t.Fatalf("enriched must grow with the sources:\n%s", stepLines(x))
	}
}

func TestPlanStreamsBundleRefusals(t *testing.T) {
	audit := App{ID: "audit", GroupExists: true, Protocol: ProtocolClassic, Topics: []Topic{
		{Name: "payments", Role: RoleSource, Partitions: 4}, {Name: "audit-seen-store-changelog", Role: RoleChangelog, Partitions: 4}}}
	ghost := App{ID: "ghost", Topics: []Topic{{Name: "orders", Role: RoleSource, Partitions: 4}}}
	shop := Reader{App: "shop", Protocol: ProtocolStreams, Members: 1, Declared: true, Reads: []string{"customers", "orders"}, Sources: []string{"customers", "orders"}}
	for _, tc := range []struct {
		name  string
		co    []CoApp
		other []App
		want  Problem
	}{
		{"undeclared", nil, []App{fraudApp(4, ProtocolClassic, 0)}, Problem{Kind: ProblemUndeclaredReaders, Field: FieldCoExpand,
			Readers: []Reader{shop, {App: "fraud", Protocol: ProtocolClassic, Reads: []string{"orders"}, Sources: []string{"orders", "payments"}}}}},
		{"undeclared reader of a co-expanded app's source", []CoApp{{App: fraudApp(4, ProtocolStreams, 1)}}, []App{audit}, Problem{Kind: ProblemUndeclaredReaders, Field: FieldCoExpand,
			Readers: []Reader{shop, {App: "fraud", Protocol: ProtocolStreams, Members: 1, Declared: true, Reads: []string{"orders", "payments"}, Sources: []string{"orders", "payments"}},
				{App: "audit", Protocol: ProtocolClassic, Reads: []string{"payments"}, Sources: []string{"payments"}}}}},
		{"live classic without quiesce", []CoApp{{App: fraudApp(4, ProtocolClassic, 2)}}, nil,
			Problem{Kind: ProblemClassicLive, Field: FieldQuiesce, App: "fraud", Subject: "fraud", Members: 2}},
		{"declared twice", []CoApp{{App: fraudApp(4, ProtocolStreams, 1)}, {App: fraudApp(4, ProtocolStreams, 1)}}, nil,
			Problem{Kind: ProblemDeclaredTwice, Field: FieldApp, App: "fraud", Subject: "fraud"}},
		{"unknown co-expanded app", []CoApp{{App: ghost}}, nil, Problem{Kind: ProblemUnknownApp, Field: FieldApp, App: "ghost", Subject: "ghost"}},
		{"co-expanded app above the target", []CoApp{{App: fraudApp(12, ProtocolStreams, 1)}}, nil,
			Problem{Kind: ProblemShrink, Field: FieldPartitions, App: "fraud", Subject: "fraud", Topic: "payments", Role: RoleSource, Partitions: 12, Target: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := PlanExpansion(ExpansionRequest{App: orderApp(4, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, CoExpand: tc.co, Others: tc.other}, true)
			requireProblem(t, err, tc.want)
			if len(x.Steps) != 0 {
				t.Fatalf("a refused plan has steps %v", x.Lines())
			}
		})
	}
}

func TestPlanStreamsBundleFinishesAnInterruptedApply(t *testing.T) {
	x, err := PlanExpansion(ExpansionRequest{
		App: orderApp(8, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, Settled: 4,
		CoExpand: []CoApp{{App: fraudApp(8, ProtocolClassic, 1), Quiesce: true, Notify: true}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1. wait until group shop is stable on 8 partitions for the quiet period",
		"2. wait until group fraud is stable on 8 partitions for the quiet period",
		"3. call the expansion endpoint of fraud with the old and new counts (8)"}
	if !slices.Equal(x.Lines(), want) {
		t.Fatalf("steps:\n%s\nwant:\n%s", stepLines(x), strings.Join(want, "\n"))
	}
	if f, _ := x.For("fraud"); f.From != 4 {
		t.Errorf("fraud from %d, want 4", f.From)
	}
}

// An app whose group reads a topic its declaration leaves out is refused
// even when nothing grows (an adoption), as before bundles existed.
func TestPlanStreamsExpansionRefusesAnUnlistedSourceWithoutGrowth(t *testing.T) {
	a := orderApp(4, ProtocolStreams, 1)
	a.Consumed = []string{"customers", "orders", "returns"}
	_, err := PlanExpansion(ExpansionRequest{App: a, Target: 4}, false)
	requireProblem(t, err, Problem{Kind: ProblemUnlistedSource, Field: FieldSources, Subject: "shop", Topic: "returns", Target: 4})
}
