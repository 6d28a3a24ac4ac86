package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAccMigrateFromMongeyKafkaTopic follows the migration guide
// (templates/guides/migrate-from-kafka-provider.md.tmpl): a topic that
// Mongey's kafka_topic created, with a typical configuration of it, is
// taken over by kafkascale_topic through an import block. The plan imports
// it and changes nothing, the apply changes nothing on the cluster, and
// the topic is never re-created: its Kafka topic id is the same after the
// apply, and after a shrink that Mongey's provider would have turned into
// a replacement and that kafkascale refuses.
//
// Mongey's provider cannot be downloaded here, so the topic is created
// with the admin client, as that provider creates it (CreateTopics with
// the partitions, the replication factor and the config map), and the
// guide's `removed { from = kafka_topic.x  lifecycle { destroy = false } }`
// step, which only drops the old resource from the state, is shown in the
// guide but not run.
func TestAccMigrateFromMongeyKafkaTopic(t *testing.T) {
	c := sharedCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	const topic = "legacy.payments"
	// resource "kafka_topic" "payments" {
	//   name               = "legacy.payments"
	//   partitions         = 6
	//   replication_factor = 3
	//   config = { "cleanup.policy" = "compact", "retention.ms" = "86400000" }
	// }
	createTopic(ctx, t, c, topic, 6, 3, map[string]string{"cleanup.policy": "compact", "retention.ms": "86400000"})
	idBefore := topicIDs(ctx, t, c, topic)[topic]

	ws := newTFWorkspace(t, c.BootstrapServers())
	config := func(partitions int) string {
		// The guide's step 2: the same attributes under kafkascale_topic,
		// with an import block.
		return fmt.Sprintf(`import {
  to = kafkascale_topic.payments
  id = "legacy.payments"
}

resource "kafkascale_topic" "payments" {
  name               = "legacy.payments"
  partitions         = %d
  replication_factor = 3
  config = {
    "cleanup.policy" = "compact"
    "retention.ms"   = "86400000"
  }
}
`, partitions)
	}
	ws.write("main.tf", config(6))
	changes, text := ws.savedPlan("migrate.tfplan")
	t.Logf("plan: %s", planSummary(text))
	if !strings.Contains(text, "Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.") || len(changes) != 1 ||
		len(changes[0].Change.Importing) == 0 || strings.Join(changes[0].Change.Actions, ",") != "no-op" {
		t.Fatalf("the plan is not one import that changes nothing:\n%s", text)
	}
	ws.mustRun("apply", "-no-color", "-input=false", "migrate.tfplan")
	if code, text := ws.run("plan", "-no-color", "-input=false", "-detailed-exitcode"); code != 0 {
		t.Fatalf("the plan after the import exited %d, want 0 (no changes):\n%s", code, text)
	}
	if id := topicIDs(ctx, t, c, topic)[topic]; id != idBefore {
		t.Fatalf("topic %s was re-created by the import: id %s, was %s", topic, id, idBefore)
	}

	// Fewer partitions: Mongey's provider plans a replacement (ForceNew),
	// deleting the topic's data. kafkascale refuses at plan time.
	ws.write("main.tf", config(3))
	code, out := ws.run("plan", "-no-color", "-input=false")
	if code != 1 || !strings.Contains(out, "Kafka cannot shrink a topic") || strings.Contains(out, "must be replaced") {
		t.Fatalf("a shrink plan exited %d, want a refusal:\n%s", code, out)
	}
	if code, out := ws.run("apply", "-no-color", "-input=false", "-auto-approve"); code != 1 || !strings.Contains(out, "Kafka cannot shrink a topic") {
		t.Fatalf("a shrink apply exited %d, want a refusal:\n%s", code, out)
	}
	md := topicIDs(ctx, t, c, topic)
	if md[topic] != idBefore {
		t.Fatalf("topic %s was re-created: id %s, was %s", topic, md[topic], idBefore)
	}
	d, err := c.Admin().ListTopics(context.WithoutCancel(ctx), topic)
	if err != nil || len(d[topic].Partitions) != 6 {
		t.Fatalf("topic %s after the refused shrink: %v partitions, %v", topic, len(d[topic].Partitions), err)
	}
	t.Logf("topic %s kept id %s and 6 partitions through the import and a refused shrink", topic, idBefore)
}
