package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// Found by the soak (seed 22, step 30): a create whose timeout ran out
// just after Kafka created the topic read it back with the apply's
// expired context, failed, and so left the topic out of the state; every
// later plan then stopped at "Topic already exists". The read-back that
// records a change must outlive the apply's deadline.
//
// Its own small cluster, not the shared one: this test runs first in the
// package, and the shared cluster's first other user (TestAccMistakes)
// comes minutes later, for which its four idle JVMs would burn CPU.
func TestAccTopicReadBackOutlivesTheApplysDeadline(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 2})
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const name = "read-back-after-deadline"
	if err := cl.CreateTopic(context.Background(), name, map[int32][]int32{0: {1, 2}, 1: {2, 1}, 2: {1, 2}}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.DeleteTopic(context.Background(), name) })

	ctx := context.Background()
	sch := topicResourceSchema(ctx)
	st := tfsdk.State{Schema: sch, Raw: tftypes.NewValue(sch.Type().TerraformType(ctx), nil)}
	if d := st.SetAttribute(ctx, path.Root("name"), name); d.HasError() {
		t.Fatal(d)
	}
	var m topicResourceModel
	if d := st.Get(ctx, &m); d.HasError() {
		t.Fatal(d)
	}
	expired, cancel := context.WithCancel(ctx)
	cancel()
	r := &TopicResource{data: &providerData{kafka: cl}}
	var diags diag.Diagnostics
	r.refreshAfterApply(expired, &m, &st, &diags)
	if diags.HasError() {
		t.Fatalf("reading the topic back after the apply's deadline: %v", diags)
	}
	var got topicResourceModel
	if d := st.Get(ctx, &got); d.HasError() {
		t.Fatal(d)
	}
	if got.Partitions.ValueInt64() != 3 || got.ReplicationFactor.ValueInt64() != 2 {
		t.Errorf("the state records %d partitions of replication factor %d; the cluster has 3 of 2",
			got.Partitions.ValueInt64(), got.ReplicationFactor.ValueInt64())
	}
}
