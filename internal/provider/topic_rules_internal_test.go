package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// The engine decides the topic rules; these check the text and attribute
// the plan shows for each.

func TestBrokerCountDiagnostic(t *testing.T) {
	d := brokerCountDiagnostic(&engine.BrokerCountError{Topic: "t", ReplicationFactor: 3, Live: []int32{1, 2}})
	want := "replication_factor 3 needs 3 brokers, one per replica, but the cluster has 2 live broker(s) (1, 2).\n\n" +
		"Lower replication_factor to at most 2, or add brokers first (kafkascale_cluster.broker_count)."
	if d.Summary() != "Replication factor above the broker count" || d.Detail() != want {
		t.Fatalf("got %q / %q", d.Summary(), d.Detail())
	}
	if dp, ok := d.(diag.DiagnosticWithPath); !ok || !dp.Path().Equal(path.Root("replication_factor")) {
		t.Fatalf("no path replication_factor: %v", d)
	}
}

func TestCheckMinInsyncDiagnostic(t *testing.T) {
	var diags diag.Diagnostics
	if !checkMinInsync("t", map[string]string{"min.insync.replicas": "2"}, 2, &diags) || diags.HasError() {
		t.Fatalf("min.insync.replicas 2 at rf 2 refused: %v", diags)
	}
	if checkMinInsync("t", map[string]string{"min.insync.replicas": "3"}, 2, &diags) {
		t.Fatal("min.insync.replicas 3 at rf 2 accepted")
	}
	want := "While attempting to plan the topic, min.insync.replicas is 3 but replication_factor is 2: a partition " +
		"never has more in-sync replicas than replicas, so every write with acks=all (the default of producers since " +
		"Kafka 3.0) would fail with NOT_ENOUGH_REPLICAS. Kafka itself accepts the setting.\n\n" +
		"Set min.insync.replicas to at most 2 (one less than replication_factor lets one broker be down), or raise " +
		"replication_factor."
	if len(diags) != 1 || diags[0].Summary() != "min.insync.replicas above the replication factor" || diags[0].Detail() != want {
		t.Fatalf("got %v", diags)
	}
	if dp, ok := diags[0].(diag.DiagnosticWithPath); !ok || !dp.Path().Equal(path.Root("config").AtMapKey("min.insync.replicas")) {
		t.Fatalf("no path config[min.insync.replicas]: %v", diags[0])
	}
}
