package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// leaseRecords is a lease log: op-1's claim, op-2's claim queued behind
// it, then op-1's heartbeat announcing it holds the lease.
func leaseRecords() []executor.LeaseRecord {
	one := executor.LeaseHolder{Operation: "op-1", Resource: `kafkascale_cluster "main"`, What: "scale-out 3 -> 5", Host: "ci-7", PID: 4242, Session: "s1", Started: t0}
	two := executor.LeaseHolder{Operation: "op-2", Resource: `kafkascale_topic "orders"`, What: "replication factor 2 -> 3", Host: "laptop", PID: 99, Session: "s2", Started: t0}
	return []executor.LeaseRecord{
		{Claim: "c1", Kind: executor.LeaseClaimed, Holder: one, Position: -1, ExpireAfter: 2 * time.Minute, Offset: 0, Time: t0},
		{Claim: "c2", Kind: executor.LeaseClaimed, Holder: two, Position: -1, ExpireAfter: 2 * time.Minute, Offset: 1, Time: t0.Add(time.Second)},
		{Claim: "c1", Kind: executor.LeaseHeartbeat, Holder: one, Position: 0, Holding: true, Previous: t0, ExpireAfter: 2 * time.Minute, Offset: 2, Time: t0.Add(30 * time.Second)},
	}
}

type fakeLeaseLog struct {
	recs  []executor.LeaseRecord
	since time.Time
}

func (f *fakeLeaseLog) Since(_ context.Context, t time.Time) ([]executor.LeaseRecord, error) {
	f.since = t
	return f.recs, nil
}

// The lease is the replay of the window every contender reads.
func TestReadLeaseReadsTheWindow(t *testing.T) {
	log := &fakeLeaseLog{recs: leaseRecords()}
	now := t0.Add(time.Minute)
	st, err := readLease(context.Background(), log, now)
	if err != nil {
		t.Fatal(err)
	}
	if !log.since.Equal(now.Add(-executor.LeaseWindow)) {
		t.Fatalf("read since %s, want %s", log.since, now.Add(-executor.LeaseWindow))
	}
	if h, ok := st.Holder(); !ok || h.ID != "c1" {
		t.Fatalf("holder %+v %v", h, ok)
	}
}

// The holder's operation, resource, process, since when and its expiry,
// then who waits behind it.
func TestWriteLease(t *testing.T) {
	st := executor.ReplayLease(leaseRecords())
	var b bytes.Buffer
	writeLease(&b, st, t0.Add(time.Minute))
	out := b.String()
	for _, want := range []string{
		"held by:         operation op-1 (scale-out 3 -> 5)\n",
		"resource:        kafkascale_cluster \"main\"\n",
		"run by:          host ci-7 pid 4242\n",
		"since:           2026-12-01 10:00:00Z\n",
		"last heartbeat:  2026-12-01 10:00:30Z\n",
		"expires:         2026-12-01 10:02:30Z unless it heartbeats again\n",
		"waiting, in the order they take the lease (1):\n",
		"  op-2       kafkascale_topic \"orders\"  replication factor 2 -> 3  laptop  99   2026-12-01 10:00:01Z\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "taking the lease") {
		t.Errorf("a holder that announced holding is shown taking it:\n%s", out)
	}
	// Past its expiry by this machine's clock the claim is overdue.
	b.Reset()
	writeLease(&b, st, t0.Add(10*time.Minute))
	if !strings.Contains(b.String(), "expires:         2026-12-01 10:02:30Z: overdue, the next claim ends it") {
		t.Errorf("an overdue holder:\n%s", b.String())
	}
	// Released: no one holds it.
	rel := append(leaseRecords()[:2:2], executor.LeaseRecord{Claim: "c1", Kind: executor.LeaseRelease, Holder: leaseRecords()[0].Holder,
		Position: 0, Previous: t0, ExpireAfter: 2 * time.Minute, Offset: 2, Time: t0.Add(40 * time.Second)},
		executor.LeaseRecord{Claim: "c2", Kind: executor.LeaseRelease, Holder: leaseRecords()[1].Holder,
			Position: 1, Previous: t0.Add(time.Second), ExpireAfter: 2 * time.Minute, Offset: 3, Time: t0.Add(41 * time.Second)})
	b.Reset()
	writeLease(&b, executor.ReplayLease(rel), t0.Add(time.Minute))
	if b.String() != "no one holds the cluster's operation lease, and no claim waits for it\n" {
		t.Errorf("released: %q", b.String())
	}
}

func TestLeaseJSON(t *testing.T) {
	var b bytes.Buffer
	if err := writeJSON(&b, leaseView(executor.ReplayLease(leaseRecords()), t0.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	var got leaseJSON
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	h := got.Holder
	if h == nil || h.Claim != "c1" || h.Operation != "op-1" || h.Resource != `kafkascale_cluster "main"` || h.Host != "ci-7" || h.PID != 4242 ||
		!h.Holding || h.Overdue || !h.Since.Equal(t0) || !h.Expires.Equal(t0.Add(150*time.Second)) {
		t.Fatalf("holder: %s", b.String())
	}
	if len(got.Waiting) != 1 || got.Waiting[0].Operation != "op-2" || got.Waiting[0].Holding {
		t.Fatalf("waiting: %s", b.String())
	}
	b.Reset()
	if err := writeJSON(&b, leaseView(executor.ReplayLease(nil), t0)); err != nil {
		t.Fatal(err)
	}
	if b.String() != `{"holder":null,"waiting":[]}`+"\n" {
		t.Fatalf("no lease: %q", b.String())
	}
}
