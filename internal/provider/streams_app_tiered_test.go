package provider_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/streamstest"
)

// A live Streams app whose source topics are tiered (remote.storage.enable,
// their older segments in remote storage only) grows from 4 to 6
// partitions like any other: the sources keep tiering at the new count,
// the group is stable on 6 when apply returns, the app never fails and
// every count is exact. The sources roll a segment every 2 s and keep none
// of the rolled ones locally past a second, so by the expansion the
// records the app counted first are served from remote storage only.
func TestAccStreamsApp_tieredSource(t *testing.T) {
	testAccParallel(t)
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}, Tiered: &kafkatest.TieredOptions{}})
	ctx := t.Context()
	adm := c.Admin()
	servers := c.BootstrapServers()
	const name, from, to = "acctiered", int32(4), int32(6)
	appID := "app-" + name
	topics := streamstest.TopicsWithPrefix(name + "-")
	for _, source := range topics.Sources() {
		createTieredTopic(t, c, source, from, 3, map[string]string{"segment.ms": "2000", "local.retention.ms": "1000", "min.insync.replicas": "2"})
	}
	createAppTopics(t, adm, from, 3, topics.Sinks()...)
	fixed := streamstest.FixedTopics(appID)

	a := streamstest.StartApp(t, streamstest.AppOptions{Bootstrap: servers, AppID: appID, Protocol: streamstest.ProtocolStreams, TopicPrefix: name + "-"})
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := a.WaitState(runCtx, "RUNNING"); err != nil {
		t.Fatalf("the app never ran: %v\n%s", err, a.LogTail(40))
	}
	w := runWorkload(t, servers, topics, from, 11)
	obs := observeApp(t, servers, topics.Counts, topics.Enriched, appID+"-counts-store-changelog")
	// Orders are written all along: wait until every leader of the topic
	// serves its first records from remote storage only.
	local, remote := waitTiered(t, c, topics.Orders, 1<<20)
	t.Logf("%s before the expansion: %d bytes on its leaders' disks, %d in remote storage", topics.Orders, local, remote)
	if remote <= 0 {
		t.Fatalf("%s has nothing in remote storage: the expansion would not be of a tiered source", topics.Orders)
	}

	addr := "kafkascale_streams_app.test"
	config := func(partitions int32) string {
		return streamsAppConfig(servers, appID, topics, partitions, `quiet_period = "2s"
  stabilization_timeout = "3m"`)
	}
	stableOn := map[string]int32{topics.Orders: to, topics.Customers: to, streamstest.RepartitionTopics(appID)[0]: to, fixed[0]: streamstest.FixedPartitions}
	steps := []resource.TestStep{{
		Config: config(from),
	}, {
		Config: config(to),
		Check: func(*terraform.State) error {
			port := kafka.StreamsPort{Client: providerClient(t, servers), Protocol: streams.ProtocolStreams}
			if st, err := port.StreamsGroup(ctx, appID, stableOn); err != nil || !st.Stable {
				return fmt.Errorf("apply returned but the group is not stable on %d partitions: %v %v", to, st, err)
			}
			for _, source := range topics.Sources() {
				if n := partitionCount(ctx, adm, source); n != to {
					return fmt.Errorf("source %s has %d partitions, want %d", source, n, to)
				}
				rcs, err := adm.DescribeTopicConfigs(ctx, source)
				if err != nil {
					return err
				}
				rc, err := rcs.On(source, nil)
				if err != nil {
					return err
				}
				tiered := false
				for _, cfg := range rc.Configs {
					tiered = tiered || cfg.Key == kafka.ConfigRemoteStorageEnable && cfg.Value != nil && *cfg.Value == "true"
				}
				if !tiered {
					return fmt.Errorf("source %s lost %s=true in the expansion", source, kafka.ConfigRemoteStorageEnable)
				}
			}
			return nil
		},
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("settled_partitions"), knownvalue.Int64Exact(int64(to))),
		},
	}}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: steps})
	// Keys homed on the new partitions, which exist only now, until the
	// app has counted some on each.
	if err := w.Grow(ctx, to, 4, 2); err != nil {
		t.Fatalf("adding keys for the new partitions: %v", err)
	}
	counted := func() bool {
		seen := obs.Snapshot()
		for p := from; p < to; p++ {
			if seen.Records[topics.Counts][p] == 0 {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(90 * time.Second); !counted() && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
	}

	stats := stopWorkloadAndCount(t, w, 90*time.Second, map[string]*streamstest.Observer{appID: obs})
	if h, err := a.Health(ctx); err != nil || h.State != "RUNNING" || h.EverError {
		t.Errorf("after the expansion the app is %q (ever in ERROR: %v, %v), want RUNNING\n%s", h.State, h.EverError, err, a.LogTail(40))
	}
	seen := obs.Snapshot()
	for p := from; p < to; p++ {
		if seen.Records[topics.Counts][p] == 0 {
			t.Errorf("no count of a new key in %s partition %d", topics.Counts, p)
		}
	}
	// Every order reads back from offset 0, the first ones, long gone from
	// the brokers' disks, from remote storage.
	assertTopicReadable(t, c, topics.Orders, 0)
	t.Logf("%d orders counted exactly through the expansion and read back from offset 0", stats.Sent)
}
