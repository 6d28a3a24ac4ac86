package engine

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fraudApp shares orders with the fixture's shop app, reads payments too,
// re-keys by card and writes alerts.
func fraudApp(n int32, protocol StreamsProtocol, members int) StreamsApp {
	return StreamsApp{
		ID: "fraud", GroupExists: true, Protocol: protocol, Members: members,
		Consumed: []string{"orders", "payments"},
		Topics: []StreamsTopic{
			{Name: "orders", Role: RoleSource, Partitions: n},
			{Name: "payments", Role: RoleSource, Partitions: n},
			{Name: "alerts", Role: RoleSink, Partitions: n},
			{Name: "fraud-bycard-repartition", Role: RoleRepartition, Partitions: n},
			{Name: "fraud-score-store-changelog", Role: RoleChangelog, Partitions: n},
		},
	}
}

func stepLines(x StreamsExpansion) string { return strings.Join(x.Lines(), "\n") }

func TestPlanStreamsBundleGrowsEveryAppsTopicsInOneRequestWithOneQuiesceWindow(t *testing.T) {
	shop := orderApp(4, ProtocolStreams, 2)
	shop.Consumed = []string{"customers", "orders"}
	r := StreamsExpansionRequest{
		App: shop, Target: 8, StaticPartitioning: true,
		CoExpand: []StreamsCoApp{{App: fraudApp(4, ProtocolClassic, 2), Quiesce: true, Notify: true}},
		Groups:   []ConsumerGroup{{ID: "audit", Members: 1, Topics: []string{"orders"}}, {ID: "unrelated", Topics: []string{"other"}}},
	}
	x, err := PlanStreamsExpansion(r, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []StreamsStep{
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
	if !slices.EqualFunc(x.Steps, want, func(a, b StreamsStep) bool {
		return a.Kind == b.Kind && a.App == b.App && a.Partitions == b.Partitions && slices.Equal(a.Topics, b.Topics)
	}) {
		t.Fatalf("steps:\n%s\nwant:\n%v", stepLines(x), want)
	}
	for _, line := range []string{"2. run the quiesce stop command of fraud", "3. wait until group fraud has no members",
		"7. wait until group fraud is stable on 8 partitions", "9. call the on_expansion_url of fraud"} {
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
	x, err := PlanStreamsExpansion(StreamsExpansionRequest{
		App: orderApp(4, ProtocolStreams, 1), Target: 8, StaticPartitioning: true,
		CoExpand: []StreamsCoApp{{App: fraudApp(4, ProtocolClassic, 0)}},
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
	fraud.Topics = append(fraud.Topics, StreamsTopic{Name: "enriched", Role: RoleSource, Partitions: 4})
	x, err := PlanStreamsExpansion(StreamsExpansionRequest{
		App: orderApp(4, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, CoExpand: []StreamsCoApp{{App: fraud}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(x.Steps[0].Topics, "enriched") || !slices.Contains(x.Steps[1].Topics, "enriched") {
		t.Fatalf("enriched must grow with the sources:\n%s", stepLines(x))
	}
}

func TestPlanStreamsBundleRefusals(t *testing.T) {
	audit := StreamsApp{ID: "audit", GroupExists: true, Protocol: ProtocolClassic, Topics: []StreamsTopic{
		{Name: "payments", Role: RoleSource, Partitions: 4}, {Name: "audit-seen-store-changelog", Role: RoleChangelog, Partitions: 4}}}
	ghost := StreamsApp{ID: "ghost", Topics: []StreamsTopic{{Name: "orders", Role: RoleSource, Partitions: 4}}}
	for _, tc := range []struct {
		name  string
		co    []StreamsCoApp
		other []StreamsApp
		field StreamsField
		app   string
		want  string
	}{
		{"undeclared", nil, []StreamsApp{fraudApp(4, ProtocolClassic, 0)}, FieldCoExpand, "",
			`shop \(declared\) reads customers, orders; fraud \(classic protocol, stopped, not declared\) reads orders.*co_expand \{ application_id = "fraud", source_topics = \["orders", "payments"\] \}`},
		{"undeclared reader of a co-expanded app's source", []StreamsCoApp{{App: fraudApp(4, ProtocolStreams, 1)}}, []StreamsApp{audit}, FieldCoExpand, "",
			`fraud \(declared\) reads orders, payments; audit \(classic protocol, stopped, not declared\) reads payments`},
		{"live classic without quiesce", []StreamsCoApp{{App: fraudApp(4, ProtocolClassic, 2)}}, nil, FieldQuiesce, "fraud",
			`group "fraud" uses the classic rebalance protocol and has 2 members`},
		{"declared twice", []StreamsCoApp{{App: fraudApp(4, ProtocolStreams, 1)}, {App: fraudApp(4, ProtocolStreams, 1)}}, nil, FieldApp, "fraud",
			`"fraud" is declared twice`},
		{"unknown co-expanded app", []StreamsCoApp{{App: ghost}}, nil, FieldApp, "ghost", `unknown application id "ghost"`},
		{"co-expanded app above the target", []StreamsCoApp{{App: fraudApp(12, ProtocolStreams, 1)}}, nil, FieldPartitions, "fraud",
			`partitions = 8 is below the 12 partitions of source topic "payments" of "fraud"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := PlanStreamsExpansion(StreamsExpansionRequest{App: orderApp(4, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, CoExpand: tc.co, Others: tc.other}, true)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v (steps %v), want an *InputError", err, x.Lines())
			}
			if !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Fatalf("err = %v\nwant it to match %q", err, tc.want)
			}
			if len(x.Steps) != 0 {
				t.Fatalf("a refused plan has steps %v", x.Lines())
			}
			found := false
			for _, p := range ie.Problems {
				var sp *StreamsProblem
				if errors.As(p, &sp) && sp.Field == tc.field && sp.App == tc.app && regexp.MustCompile(tc.want).MatchString(sp.Error()) {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem on field %q of app %q among %v", tc.field, tc.app, ie.Problems)
			}
		})
	}
}

func TestPlanStreamsBundleFinishesAnInterruptedApply(t *testing.T) {
	x, err := PlanStreamsExpansion(StreamsExpansionRequest{
		App: orderApp(8, ProtocolStreams, 1), Target: 8, StaticPartitioning: true, Settled: 4,
		CoExpand: []StreamsCoApp{{App: fraudApp(8, ProtocolClassic, 1), Quiesce: true, Notify: true}},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1. wait until group shop is stable on 8 partitions for the quiet period",
		"2. wait until group fraud is stable on 8 partitions for the quiet period",
		"3. call the on_expansion_url of fraud with the old and new counts (8)"}
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
	if _, err := PlanStreamsExpansion(StreamsExpansionRequest{App: a, Target: 4}, false); err == nil || !strings.Contains(err.Error(), `"returns", which is not in source_topics`) {
		t.Fatalf("err %v, want the unlisted source refused", err)
	}
}
