package provider

import (
	"errors"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// The engine refuses a choice of leaving brokers as data; the plan renders
// it on the attribute to change, with the configuration to write. Each
// case is refused by the engine itself, and checked against the full text
// and the patterns the acceptance tests look for.
func TestLeavingRefusalsRenderTheConfiguration(t *testing.T) {
	cluster := func(deadID int32) engine.Cluster {
		var c engine.Cluster
		for id := int32(1); id <= 4; id++ {
			c.Brokers = append(c.Brokers, engine.Broker{ID: id, Rack: string('a' + (id-1)%3), Alive: id != deadID, CapacityBytes: 1 << 40})
		}
		for p := int32(0); p < 8; p++ {
			c.Partitions = append(c.Partitions, engine.Partition{Topic: "orders", Partition: p, SizeBytes: 1,
				Replicas: []int32{p%4 + 1, (p+1)%4 + 1, (p+2)%4 + 1}})
		}
		return c
	}
	healthy, withDead := cluster(0), cluster(4)
	const lead = "While choosing the brokers that leave, nothing was changed: "
	for _, tc := range []struct {
		name    string
		c       engine.Cluster
		target  int
		ids     []int32
		attr    string
		detail  string
		pattern string // as an acceptance test matches it, "" for none
	}{
		{"unknown id", healthy, 3, []int32{9}, "remove_broker_ids",
			"broker 9 is not registered; the registered brokers are [1 2 3 4]. Name only registered brokers in remove_broker_ids",
			`(?s)broker 9 is not registered; the registered brokers are \[1 2 3 4\]`},
		{"duplicate", healthy, 2, []int32{4, 4}, "remove_broker_ids", "broker 4 is named twice", `(?s)broker 4 is named twice`},
		{"count mismatch", healthy, 3, []int32{3, 4}, "remove_broker_ids",
			"2 brokers are named to remove, but going from 4 to 3 brokers removes 1; name 1, or set broker_count to 2",
			`(?s)2 brokers are named to remove, but going from 4 to 3 brokers removes 1`},
		{"ids on a scale-out", healthy, 5, []int32{4}, "remove_broker_ids",
			"brokers [4] are named to remove, but broker_count 5 is above the 4 brokers registered: a scale-out removes no broker. " +
				"Remove remove_broker_ids, or set broker_count to 4 to replace them",
			`(?s)a scale-out removes no broker`},
		{"below the largest RF", healthy, 2, []int32{3, 4}, "remove_broker_ids",
			"removing brokers [3 4] leaves 2 brokers, fewer than the replication factor 3 of topic orders. " +
				"Keep at least 3 brokers, or lower the replication factor of orders first",
			`(?s)This change of brokers cannot be made.*leaves 2 brokers, fewer than the replication factor 3`},
		{"scale-out with a dead broker", withDead, 5, nil, "broker_count",
			"brokers [4] are dead (fenced or offline), so their partitions are under-replicated, and a scale-out cannot heal them. " +
				"Remove them first (broker_count = 3, or remove_broker_ids = [4]), or replace them (remove_broker_ids = [4] with broker_count = 4)", ""},
		{"live removal while another is dead", withDead, 3, []int32{3}, "remove_broker_ids",
			"brokers [4] are dead (fenced or offline), but the change removes live brokers [3] and keeps them. " +
				"Heal the dead brokers first: remove them (remove_broker_ids = [4]) or replace them",
			`(?s)brokers \[4\] are dead.*removes live brokers \[3\] and keeps them.*remove them \(remove_broker_ids = \[4\]\) or replace them`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := engine.ChooseLeaving(tc.c, tc.target, tc.ids, engine.DefaultOptions())
			var le *engine.LeavingError
			if !errors.As(err, &le) {
				t.Fatalf("the engine did not refuse: %v", err)
			}
			ds := planDiagnostics(clusterTarget(tc.target), err)
			if len(ds) != 1 || ds[0].Summary() != "This change of brokers cannot be made" {
				t.Fatalf("diagnostics %v", ds)
			}
			if got, want := ds[0].Detail(), lead+tc.detail+"."; got != want {
				t.Fatalf("detail\n%q\nwant\n%q", got, want)
			}
			if dp, ok := ds[0].(diag.DiagnosticWithPath); !ok || !dp.Path().Equal(path.Root(tc.attr)) {
				t.Fatalf("not on %s: %v", tc.attr, ds[0])
			}
			if tc.pattern != "" && !regexp.MustCompile(tc.pattern).MatchString(ds[0].Summary()+"\n"+ds[0].Detail()) {
				t.Fatalf("%q does not match %s", ds[0].Detail(), tc.pattern)
			}
		})
	}
}
