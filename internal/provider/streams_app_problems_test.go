package provider

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// problemApp is an app as the cluster shows it: id's sources at n
// partitions, a sink and an internal topic.
func problemApp(id string, n int32, protocol streams.Protocol, members int, sources ...string) streams.App {
	a := streams.App{ID: id, GroupExists: true, Protocol: protocol, Members: members}
	for _, s := range sources {
		a.Topics = append(a.Topics, streams.Topic{Name: s, Role: streams.RoleSource, Partitions: n})
	}
	a.Topics = append(a.Topics,
		streams.Topic{Name: id + "-out", Role: streams.RoleSink, Partitions: n},
		streams.Topic{Name: id + "-agg-repartition", Role: streams.RoleRepartition, Partitions: n})
	return a
}

// TestStreamsRefusalsKeepTheirWords renders the engine's refusals as the
// plan shows them, and checks each against the patterns the acceptance
// tests (streams_app_*_test.go, mistakes_test.go) and the users' scripts
// match, on the attribute the problem is about.
func TestStreamsRefusalsKeepTheirWords(t *testing.T) {
	shop := func(n int32, protocol streams.Protocol, members int) streams.App {
		return problemApp("shop", n, protocol, members, "customers", "orders")
	}
	missing := shop(4, streams.ProtocolStreams, 1)
	missing.Topics = append(missing.Topics, streams.Topic{Name: "payments", Role: streams.RoleSource}, streams.Topic{Name: "receipts", Role: streams.RoleSink})
	unlisted := shop(4, streams.ProtocolStreams, 1)
	unlisted.Consumed = []string{"customers", "orders", "returns", "shop-out"}
	uneven := shop(4, streams.ProtocolClassic, 0)
	uneven.Topics[0].Partitions = 6 // customers
	split := shop(4, streams.ProtocolStreams, 1)
	split.Topics = append(split.Topics, streams.Topic{Name: "shop-counts-store-changelog", Role: streams.RoleChangelog, Partitions: 4})
	split.Subtopologies = []streams.Subtopology{
		{ID: "0", Sources: []string{"orders", "customers"}},
		{ID: "1", Sources: []string{"shop-agg-repartition"}, Changelogs: []string{"shop-counts-store-changelog"}},
		{ID: "2", Sources: []string{"orders", "shop-agg-repartition"}},
	}
	ghost := streams.App{ID: "app-accnobody", Topics: []streams.Topic{{Name: "orders", Role: streams.RoleSource, Partitions: 4}}}
	billing := problemApp("billing", 4, streams.ProtocolStreams, 1, "shop-out")
	totals := problemApp("totals", 4, streams.ProtocolClassic, 1, "orders", "refunds")
	stopped := problemApp("totals", 4, streams.ProtocolClassic, 0, "orders", "refunds")
	fraud := problemApp("fraud", 12, streams.ProtocolStreams, 1, "orders", "payments")
	static := streams.ExpansionRequest{Target: 8, StaticPartitioning: true}
	with := func(a streams.App, f func(*streams.ExpansionRequest)) streams.ExpansionRequest {
		r := static
		r.App = a
		if f != nil {
			f(&r)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    streams.ExpansionRequest
		at   path.Path
		want string
	}{
		{"unknown app", with(ghost, nil), path.Root("application_id"),
			`unknown application id "app-accnobody": the cluster has no group of that name and no internal topics.*run the app once so that Streams creates them`},
		{"missing source", with(missing, nil), path.Root("source_topics"),
			`(?s)source topic "payments" does not exist: kafkascale grows an app's topics but creates none.*Create it first, for example with a kafkascale_topic resource.*or correct source_topics.*Nothing was changed on the cluster`},
		{"missing sink", with(missing, nil), path.Root("sink_topics"),
			`sink topic "receipts" does not exist: .*could not write to a topic that is not there.*or correct sink_topics`},
		{"shrink", with(shop(6, streams.ProtocolStreams, 1), func(r *streams.ExpansionRequest) { r.Target = 4 }), path.Root("partitions"),
			`partitions = 4 is below the 6 partitions of source topic "orders": Kafka can add partitions to a topic but never remove them`},
		{"not static", with(shop(4, streams.ProtocolStreams, 1), func(r *streams.ExpansionRequest) { r.StaticPartitioning = false }), path.Root("static_partitioning"),
			`static_partitioning is false, so the expansion of "shop" to 8 partitions is refused.*Set static_partitioning = true only if`},
		{"live classic", with(shop(4, streams.ProtocolClassic, 1), nil), path.Root("quiesce"),
			`classic rebalance protocol and has 1 members.*give a quiesce block whose commands stop and start it`},
		{"unlisted source", with(unlisted, nil), path.Root("source_topics"),
			`co-partitioning: group "shop" consumes topic "returns", which is not in source_topics: it would stay as it is while the app's other sources grow to 8; add it to source_topics`},
		{"consumed sink", with(unlisted, nil), path.Root("sink_topics"),
			`co-partitioning: topic "shop-out" is listed in sink_topics, but group "shop" consumes it; list it in source_topics`},
		{"uneven sources", with(uneven, nil), path.Root("source_topics"),
			`the source topics have different partition counts \(orders at 4 but customers at 6\).*growing them all to 8.*Bring the sources to one count first`},
		{"changelog against tasks", with(split, func(r *streams.ExpansionRequest) { r.Fixed = []string{"shop-agg-repartition"} }), path.Root("fixed_internal_topics"),
			`changelog "shop-counts-store-changelog" would have 8 partitions but its subtopology 1 has 4 tasks`},
		{"unequal subtopology", with(split, func(r *streams.ExpansionRequest) { r.Fixed = []string{"shop-agg-repartition"} }), path.Root("fixed_internal_topics"),
			`co-partitioning: subtopology 2 reads shop-agg-repartition at 4 but orders at 8 after the expansion`},
		{"not internal", with(shop(4, streams.ProtocolStreams, 1), func(r *streams.ExpansionRequest) { r.Fixed = []string{"orders"} }), path.Root("fixed_internal_topics"),
			`fixed_internal_topics lists "orders", which is not an internal topic of "shop" on the cluster \(its internal topics: shop-agg-repartition\); list only topics named "shop"-…-repartition or -changelog`},
		{"downstream", with(shop(4, streams.ProtocolStreams, 1), func(r *streams.ExpansionRequest) { r.Others = []streams.App{billing} }), path.Root("sink_topics"),
			`sink topic "shop-out" is a source of Streams app "billing" \(streams protocol, 1 member\(s\)\), which is downstream and must be expanded first \(order: billing, then shop\): declare a kafkascale_streams_app for "billing" with partitions = 8 and add it to this resource's depends_on`},
		{"undeclared live reader", with(shop(4, streams.ProtocolStreams, 1), func(r *streams.ExpansionRequest) { r.Others = []streams.App{totals} }), path.Root("co_expand"),
			`(?s)Streams apps this expansion does not declare read the sources it grows.*shop \(declared\) reads customers, orders; totals \(classic protocol, 1 member\(s\), not declared\) reads orders.*` +
				`co_expand \{ application_id = "totals", source_topics = \["orders", "refunds"\] \}`},
		{"undeclared stopped reader", with(shop(4, streams.ProtocolStreams, 1), func(r *streams.ExpansionRequest) { r.Others = []streams.App{stopped} }), path.Root("co_expand"),
			`(?s)totals \(classic protocol, stopped, not declared\) reads orders.*co_expand \{ application_id = "totals"`},
		{"co-expanded app above the target", with(shop(4, streams.ProtocolStreams, 1), func(r *streams.ExpansionRequest) {
			r.CoExpand = []streams.CoApp{{App: fraud}}
		}), path.Root("co_expand").AtListIndex(0).AtName("application_id"),
			`partitions = 8 is below the 12 partitions of source topic "payments" of "fraud": Kafka can add partitions to a topic but never remove them`},
		{"co-expanded app and static partitioning", with(shop(4, streams.ProtocolStreams, 1), func(r *streams.ExpansionRequest) {
			r.StaticPartitioning = false
			r.CoExpand = []streams.CoApp{{App: problemApp("fraud", 4, streams.ProtocolStreams, 1, "orders", "payments")}}
		}), path.Root("static_partitioning"),
			`static_partitioning is false, so the expansion of "shop" and the apps it co-expands \(fraud\) to 8 partitions is refused`},
		{"declared twice", with(shop(4, streams.ProtocolStreams, 1), func(r *streams.ExpansionRequest) {
			f := problemApp("fraud", 4, streams.ProtocolStreams, 1, "orders", "payments")
			r.CoExpand = []streams.CoApp{{App: f}, {App: f}}
		}), path.Root("co_expand").AtListIndex(0).AtName("application_id"),
			`Streams app "fraud" is declared twice in this expansion; declare each app once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := streams.PlanExpansion(tc.r, false)
			if err == nil {
				t.Fatal("the expansion was not refused")
			}
			var co []string
			for _, c := range tc.r.CoExpand {
				co = append(co, c.App.ID)
			}
			diags := streamsPlanDiagnostics(tc.r.App.ID, co, err)
			re := regexp.MustCompile(tc.want)
			if !slices.ContainsFunc(diags, func(d diag.Diagnostic) bool {
				wp, ok := d.(diag.DiagnosticWithPath)
				return ok && wp.Path().Equal(tc.at) && d.Summary() == "Streams expansion refused" && re.MatchString(d.Detail())
			}) {
				t.Fatalf("no diagnostic on %s matches %s among:\n%s", tc.at, re, diagnosticsText(diags))
			}
		})
	}
}

func diagnosticsText(diags diag.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		at := ""
		if wp, ok := d.(diag.DiagnosticWithPath); ok {
			at = wp.Path().String()
		}
		b.WriteString(at + ": " + d.Summary() + ": " + d.Detail() + "\n")
	}
	return b.String()
}

// At plan time a downstream app that has not grown yet is a warning, with
// the words of the refusal the apply gives.
func TestStreamsDownstreamWarningKeepsTheRefusalsWords(t *testing.T) {
	shop := problemApp("shop", 4, streams.ProtocolStreams, 1, "orders")
	billing := problemApp("billing", 4, streams.ProtocolClassic, 0, "shop-out")
	x, err := streams.PlanExpansion(streams.ExpansionRequest{App: shop, Target: 8, StaticPartitioning: true,
		Others: []streams.App{billing}, DownstreamLater: true}, false)
	if err != nil || len(x.Warnings) != 1 {
		t.Fatalf("err %v, warnings %v: want one warning", err, x.Warnings)
	}
	var diags diag.Diagnostics
	streamsDownstreamWarning("shop", false, x.Warnings[0], &diags)
	want := regexp.MustCompile(`(?s)Streams app shop: sink topic "shop-out" is a source of Streams app "billing" \(classic protocol, stopped\), which is downstream ` +
		`and must be expanded first \(order: billing, then shop\).*The apply checks again`)
	if len(diags) != 1 || diags.WarningsCount() != 1 || !want.MatchString(diags[0].Detail()) {
		t.Fatalf("diagnostics:\n%s\nwant one warning matching %s", diagnosticsText(diags), want)
	}
	if wp, ok := diags[0].(diag.DiagnosticWithPath); !ok || !wp.Path().Equal(path.Root("sink_topics")) {
		t.Errorf("the warning is not on sink_topics: %v", diags[0])
	}
}

// expansion_order names the endpoint by its attribute; the acceptance
// tests match these lines.
func TestStreamsPlanLinesNameTheEndpointAttribute(t *testing.T) {
	shop := problemApp("shop", 4, streams.ProtocolStreams, 1, "orders")
	fraud := problemApp("fraud", 4, streams.ProtocolStreams, 1, "orders", "payments")
	single, err := streams.PlanExpansion(streams.ExpansionRequest{App: shop, Target: 8, StaticPartitioning: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := streams.PlanExpansion(streams.ExpansionRequest{App: shop, Target: 8, StaticPartitioning: true,
		CoExpand: []streams.CoApp{{App: fraud, Notify: true}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lines []string
		want  []string
	}{
		{streamsPlanLines(single.Steps), []string{`^1\. grow sink topics shop-out to 8 partitions`, `^2\. grow .* to 8 partitions in one CreatePartitions request`,
			`^3\. wait until the group is stable on 8 partitions`, `^4\. call on_expansion_url with the old and new counts \(8\)$`}},
		{streamsPlanLines(bundle.Steps), []string{`^1\. grow sink topics fraud-out, shop-out to 8`, `^2\. grow .* in one CreatePartitions request`,
			`^3\. wait until group shop is stable on 8`, `^4\. wait until group fraud is stable on 8`,
			`^5\. call the on_expansion_url of shop`, `^6\. call the on_expansion_url of fraud with the old and new counts \(8\)$`}},
	} {
		if len(tc.lines) != len(tc.want) {
			t.Fatalf("lines:\n%s\nwant %d", strings.Join(tc.lines, "\n"), len(tc.want))
		}
		for i, w := range tc.want {
			if !regexp.MustCompile(w).MatchString(tc.lines[i]) {
				t.Errorf("line %q does not match %s", tc.lines[i], w)
			}
		}
	}
}
