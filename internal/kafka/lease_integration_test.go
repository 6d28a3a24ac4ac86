package kafka_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// leaseCluster is the shared real cluster, with the lease log created.
func leaseCluster(t *testing.T) (*kafka.Client, func() *kafka.Client) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("starts Kafka: set TF_ACC=1")
	}
	c, cl := sharedCluster(t)
	// Each "process" has a client of its own, as two Terraform runs do.
	another := func() *kafka.Client {
		o, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(o.Close)
		return o
	}
	if err := cl.LeaseLog().Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	return cl, another
}

// The Kafka semantics the lease relies on: one partition, the broker's
// clock on every record, and reads by time that keep offset order.
func TestLeaseLog_brokerOrdersAndStampsRecords(t *testing.T) {
	cl, another := leaseCluster(t)
	ctx := context.Background()
	c, _ := sharedCluster(t)
	if got, _ := topicConfig(t, c, kafka.LeaseTopic, "message.timestamp.type"); got != "LogAppendTime" {
		t.Fatalf("%s message.timestamp.type = %q; want LogAppendTime, so every contender judges expiry on the broker's clock", kafka.LeaseTopic, got)
	}
	if got, _ := topicConfig(t, c, kafka.LeaseTopic, "cleanup.policy"); got != "delete" {
		t.Fatalf("%s cleanup.policy = %q; want delete: compaction would erase the log order", kafka.LeaseTopic, got)
	}

	begin := time.Now()
	logs := []*kafka.LeaseLog{cl.LeaseLog(), another().LeaseLog(), another().LeaseLog()}
	var wg sync.WaitGroup
	for i, l := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				r := executor.LeaseRecord{Claim: fmt.Sprintf("order-test-%d", i), Kind: executor.LeaseHeartbeat, Position: int64(j)}
				if err := l.Append(ctx, r); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	recs, err := logs[1].Since(ctx, begin.Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var mine []executor.LeaseRecord
	for _, r := range recs {
		if strings.HasPrefix(r.Claim, "order-test-") {
			mine = append(mine, r)
		}
	}
	if len(mine) != 15 {
		t.Fatalf("read back %d of the 15 records appended by 3 clients", len(mine))
	}
	perClaim := map[string]int64{}
	for i, r := range mine {
		if i > 0 && (r.Offset <= mine[i-1].Offset || r.Time.Before(mine[i-1].Time)) {
			t.Fatalf("record %d (offset %d, %s) is not after record %d (offset %d, %s)", i, r.Offset, r.Time, i-1, mine[i-1].Offset, mine[i-1].Time)
		}
		if r.Time.Before(begin.Add(-time.Second)) || r.Time.After(time.Now().Add(time.Second)) {
			t.Fatalf("record at offset %d stamped %s; want the broker's append time, between %s and now", r.Offset, r.Time, begin)
		}
		// Each client's records keep its own order.
		if want := perClaim[r.Claim]; r.Position != want {
			t.Fatalf("%s: record %d read before record %d", r.Claim, r.Position, want)
		}
		perClaim[r.Claim]++
	}

	// Reading by time leaves out what came before.
	cut := mine[7].Time.Add(time.Millisecond)
	later, err := logs[2].Since(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range later {
		if r.Time.Before(cut) {
			t.Fatalf("Since(%s) returned a record stamped %s", cut, r.Time)
		}
	}
}

// Two processes on the real broker: the second waits for the first, and
// their work never overlaps; then a killed holder's lease is taken over
// after its expiry, and at once by the process resuming its operation.
func TestLessee_realBroker(t *testing.T) {
	cl, another := leaseCluster(t)
	ctx := context.Background()
	a := &executor.Lessee{Records: cl.LeaseLog(), Host: "host-a", PID: 1, Session: "a", ExpireAfter: 3 * time.Second}
	b := &executor.Lessee{Records: another().LeaseLog(), Host: "host-b", PID: 2, Session: "b", ExpireAfter: 3 * time.Second}

	var inside, overlaps atomic.Int32
	work := func(d time.Duration) func(context.Context, *executor.Held) error {
		return func(context.Context, *executor.Held) error {
			if inside.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(d)
			inside.Add(-1)
			return nil
		}
	}
	holding := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := a.Hold(ctx, executor.LeaseWork{Operation: "op-a"}, func(ctx context.Context, h *executor.Held) error {
			close(holding)
			return work(3*time.Second)(ctx, h)
		}); err != nil {
			t.Error(err)
		}
	}()
	<-holding
	begin := time.Now()
	if err := b.Hold(ctx, executor.LeaseWork{Operation: "op-b"}, work(0)); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(begin)
	wg.Wait()
	if overlaps.Load() > 0 || waited < 2*time.Second {
		t.Fatalf("b waited %s and %d overlap(s); want b to wait for a's 3s of work, with no overlap", waited, overlaps.Load())
	}

	// A holder killed mid-operation: a claim, its announcement, nothing more.
	dead := &deadLessee{log: cl.LeaseLog()}
	dead.hold(t, "op-killed", 3*time.Second)
	begin = time.Now()
	if err := b.Hold(ctx, executor.LeaseWork{Operation: "op-next"}, work(0)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took < 2*time.Second || took > 10*time.Second {
		t.Fatalf("took over a dead holder after %s; want after its 3s expiry", took)
	}

	dead.hold(t, "op-resumed", 3*time.Second)
	begin = time.Now()
	if err := b.Hold(ctx, executor.LeaseWork{Operation: "op-resumed"}, work(0)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Fatalf("resuming the dead holder's operation took the lease after %s; want at once", took)
	}
}

// deadLessee writes what a killed holder leaves behind.
type deadLessee struct{ log *kafka.LeaseLog }

func (d *deadLessee) hold(t *testing.T, op string, ttl time.Duration) {
	t.Helper()
	ctx := context.Background()
	id := "dead-" + op
	h := executor.LeaseHolder{Operation: op, Resource: "r", Host: "lost", PID: 9, Session: "dead"}
	if err := d.log.Append(ctx, executor.LeaseRecord{Claim: id, Kind: executor.LeaseClaimed, Holder: h, Position: -1, ExpireAfter: ttl}); err != nil {
		t.Fatal(err)
	}
	recs, err := d.log.Since(ctx, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	st := executor.ReplayLease(recs)
	me, ok := st.Claim(id)
	if !ok {
		t.Fatalf("claim %s not read back", id)
	}
	if err := d.log.Append(ctx, executor.LeaseRecord{Claim: id, Kind: executor.LeaseHeartbeat, Holder: h, Position: me.Position, Holding: true, Previous: me.LastSeen, ExpireAfter: ttl}); err != nil {
		t.Fatal(err)
	}
	if hd, _ := st.Holder(); hd.ID != id {
		t.Fatalf("the dead holder %s does not hold the lease; %s does", id, hd.ID)
	}
}
