package provider

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// The refresh of 2,000 topics, on a real local cluster (3 brokers, 2,000
// topics of one partition, each with a config of its own):
//
//	go test -run '^$' -bench TopicRefresh -benchtime 3x ./internal/provider/
//
// "read" runs kafkascale_topic's own Read for every topic, ten at a time as
// Terraform's default -parallelism does, on a new client each time (a new
// provider process, cold). "per-topic" is the naive refresh for comparison:
// one Metadata and one DescribeConfigs request per topic. Both count every
// request written to a broker (connection set-up included) and report it
// as requests/op. "describe-batch" times the batched describe alone
// (DescribeTopics of every topic, warm client). A benchmark, not a test: no
// figure fails it.

const refreshTopics = 2000

func BenchmarkTopicRefresh(b *testing.B) {
	c := kafkatest.StartT(b, kafkatest.Options{Brokers: 3, HeapMB: 512})
	names := createRefreshTopics(b, c)
	ctx := context.Background()
	sch := topicResourceSchema(ctx)

	b.Run("read", func(b *testing.B) {
		var rc kafkatest.RequestCount
		for b.Loop() {
			b.StopTimer()
			cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers(), OnRequest: rc.Add})
			if err != nil {
				b.Fatal(err)
			}
			r := &TopicResource{data: &providerData{kafka: cl}}
			b.StartTimer()
			refreshAll(b, names, func(name string) error { return readOne(ctx, r, sch, name) })
			b.StopTimer()
			cl.Close()
			b.StartTimer()
		}
		reportRequests(b, &rc)
	})

	// The batched read alone, on a warm client: one Metadata request and
	// two DescribeConfigs requests of 1,000 topics each.
	b.Run("describe-batch", func(b *testing.B) {
		var rc kafkatest.RequestCount
		cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers(), OnRequest: rc.Add})
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		if _, err := cl.DescribeTopics(ctx, nil); err != nil {
			b.Fatal(err)
		}
		rc.Reset()
		for b.Loop() {
			got, err := cl.DescribeTopics(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if len(got) < refreshTopics {
				b.Fatalf("described %d topics, want %d", len(got), refreshTopics)
			}
		}
		reportRequests(b, &rc)
	})

	b.Run("per-topic", func(b *testing.B) {
		var rc kafkatest.RequestCount
		for b.Loop() {
			b.StopTimer()
			cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers(), OnRequest: rc.Add})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			refreshAll(b, names, func(name string) error {
				got, err := cl.DescribeTopics(ctx, []string{name})
				if err == nil && len(got[name].Partitions) != 1 {
					err = fmt.Errorf("topic %s read with %d partitions", name, len(got[name].Partitions))
				}
				return err
			})
			b.StopTimer()
			cl.Close()
			b.StartTimer()
		}
		reportRequests(b, &rc)
	})
}

func reportRequests(b *testing.B, rc *kafkatest.RequestCount) {
	n := float64(b.N)
	b.ReportMetric(float64(rc.Total())/n, "requests/op")
	b.ReportMetric(float64(rc.Of("Metadata")+rc.Of("DescribeConfigs"))/n, "describe-requests/op")
	b.ReportMetric(refreshTopics, "topics/op")
	b.Logf("%d op(s): %s", b.N, rc)
}

// refreshAll reads every topic with ten workers, as Terraform refreshes.
func refreshAll(b *testing.B, names []string, read func(string) error) {
	work := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				if err := read(n); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// readOne runs the resource's Read on a state that knows only the name, as
// after an import, and checks what it recorded.
func readOne(ctx context.Context, r *TopicResource, sch schema.Schema, name string) error {
	st := tfsdk.State{Schema: sch, Raw: tftypes.NewValue(sch.Type().TerraformType(ctx), nil)}
	if d := st.SetAttribute(ctx, path.Root("name"), name); d.HasError() {
		return fmt.Errorf("%v", d)
	}
	resp := resource.ReadResponse{State: tfsdk.State{Schema: sch, Raw: st.Raw.Copy()}}
	r.Read(ctx, resource.ReadRequest{State: st}, &resp)
	if resp.Diagnostics.HasError() {
		return fmt.Errorf("reading %s: %v", name, resp.Diagnostics)
	}
	var m topicResourceModel
	if d := resp.State.Get(ctx, &m); d.HasError() {
		return fmt.Errorf("%v", d)
	}
	cfg := map[string]string{}
	m.Config.ElementsAs(ctx, &cfg, false)
	if m.Partitions.ValueInt64() != 1 || m.ReplicationFactor.ValueInt64() != 1 || cfg["retention.ms"] == "" {
		return fmt.Errorf("topic %s read as %d partitions, RF %d, config %v", name, m.Partitions.ValueInt64(), m.ReplicationFactor.ValueInt64(), cfg)
	}
	return nil
}

// createRefreshTopics creates the topics in batches of 250 per request and
// waits until every broker lists them all with a leader.
func createRefreshTopics(b *testing.B, c *kafkatest.Cluster) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	names := make([]string, refreshTopics)
	for i := range names {
		names[i] = fmt.Sprintf("refresh-%04d", i)
	}
	for i := 0; i < len(names); i += 250 {
		batch := names[i:min(i+250, len(names))]
		retention := fmt.Sprint(3600000 + i)
		resp, err := c.Admin().CreateTopics(ctx, 1, 1, map[string]*string{"retention.ms": &retention}, batch...)
		if err != nil {
			b.Fatal(err)
		}
		if err := resp.Error(); err != nil {
			b.Fatal(err)
		}
	}
	for _, br := range c.Brokers() {
		for {
			req := kmsg.NewPtrMetadataRequest()
			kr, err := req.RequestWith(ctx, c.Client().Broker(int(br.ID)))
			if err != nil {
				b.Fatal(err)
			}
			led := 0
			for _, t := range kr.Topics {
				if len(t.Partitions) == 1 && t.Partitions[0].Leader >= 0 {
					led++
				}
			}
			if led >= refreshTopics {
				break
			}
			if ctx.Err() != nil {
				b.Fatalf("broker %d lists %d of %d topics with a leader", br.ID, led, refreshTopics)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	b.Logf("created %d topics in %s", refreshTopics, time.Since(start).Round(time.Millisecond))
	return names
}
