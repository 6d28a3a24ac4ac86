package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// An empty partition grows at 0 without a request: the growth of a plan
// that moves only empty partitions is read from no broker at all (here,
// from an address nothing listens on).
func TestRecentGrowthOfEmptyPartitionsAsksNothing(t *testing.T) {
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	parts := []engine.PartitionSize{{Topic: "empty", Partition: 0}, {Topic: "empty", Partition: 1}}
	got, err := cl.Port().RecentGrowth(ctx, parts, time.Minute)
	if err != nil || len(got) != 0 {
		t.Fatalf("RecentGrowth of empty partitions = %v, %v; want nothing, without asking a broker", got, err)
	}
}
