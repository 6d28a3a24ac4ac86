//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ledger is an idempotent acks=all producer that writes numbered records
// with checksums to its topics, round-robin by sequence number, for the
// whole soak, and remembers which were acknowledged. A record that failed
// was never acknowledged, so it is not counted as lost.
type ledger struct {
	topics []string
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	acked map[uint64]bool
	errs  int
}

func ledgerValue(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	sum := sha256.Sum256(b[:])
	return []byte(hex.EncodeToString(sum[:]))
}

func (l *ledger) topicOf(seq uint64) string { return l.topics[seq%uint64(len(l.topics))] }

// startLedger starts producing; every topic exists already.
func startLedger(servers []string, topics []string) (*ledger, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(servers...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(2*time.Minute), kgo.UnknownTopicRetries(-1),
		// Records wait up to 250 ms for others of their partition: the
		// brokers' cost is per produce request far more than per record
		// (9.0 s of their CPU a minute for 50 records a second sent one
		// by one, 1.1 s with this linger, on an idle 3-broker cluster).
		kgo.ProducerLinger(250*time.Millisecond))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &ledger{topics: topics, cancel: cancel, done: make(chan struct{}), acked: map[uint64]bool{}}
	go func() {
		defer close(l.done)
		defer cl.Close()
		var wg sync.WaitGroup
		for seq := uint64(0); ctx.Err() == nil; seq++ {
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], seq)
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Topic: l.topicOf(seq), Key: k[:], Value: ledgerValue(seq)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				l.mu.Lock()
				defer l.mu.Unlock()
				if err != nil {
					l.errs++
					return
				}
				l.acked[binary.BigEndian.Uint64(r.Key)] = true
			})
			// 50 records a second, so that every fault of a step lands
			// between acknowledged records of each topic.
			time.Sleep(20 * time.Millisecond)
		}
		wg.Wait()
	}()
	return l, nil
}

func (l *ledger) stop() {
	l.cancel()
	<-l.done
}

// ledgerCheck is what one read of the ledger found.
type ledgerCheck struct {
	acked, failed  int
	lost, bad      int
	unread         string // why the read stopped short, if it did
	missingByTopic map[string]int
}

func (c ledgerCheck) ok() bool { return c.lost == 0 && c.bad == 0 && c.unread == "" }

func (c ledgerCheck) String() string {
	switch {
	case c.unread != "":
		return "UNREAD " + c.unread
	case c.lost > 0 || c.bad > 0:
		return fmt.Sprintf("LOST %d bad %d %v", c.lost, c.bad, c.missingByTopic)
	}
	return fmt.Sprintf("ok %d", c.acked)
}

// verify reads every ledger topic to the end offsets listed after the
// snapshot of acknowledged records, so every record acknowledged by then
// lies below them: each must be there with its checksum.
func (l *ledger) verify(ctx context.Context, adm *kadm.Client, servers []string) ledgerCheck {
	l.mu.Lock()
	acked := make(map[uint64]bool, len(l.acked))
	for s := range l.acked {
		acked[s] = true
	}
	res := ledgerCheck{acked: len(acked), failed: l.errs, missingByTopic: map[string]int{}}
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	ends, err := listEnds(ctx, adm, l.topics)
	if err != nil {
		res.unread = "end offsets: " + err.Error()
		return res
	}
	// Each partition is read up to its own end offset. The ledger goes on
	// producing while this reads, so a total count of records is no stop
	// condition: newer records of fast partitions made up the count while
	// a slow partition's tail was still unread, and the check reported
	// nine records of "plain" lost that were there (seed 22, step 31).
	left := map[string]map[int32]int64{}
	var want int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset <= 0 {
			return
		}
		if left[o.Topic] == nil {
			left[o.Topic] = map[int32]int64{}
		}
		left[o.Topic][o.Partition] = o.Offset
		want += o.Offset
	})
	pending := 0
	for _, ps := range left {
		pending += len(ps)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(servers...), kgo.ConsumeTopics(l.topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		res.unread = err.Error()
		return res
	}
	defer cl.Close()
	seen := make(map[uint64]bool, len(acked))
	var got int64
	for pending > 0 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			got++
			if end, ok := left[r.Topic][r.Partition]; ok && r.Offset+1 >= end {
				delete(left[r.Topic], r.Partition)
				pending--
			}
			if len(r.Key) != 8 {
				return // a Fill record, not the ledger's
			}
			seq := binary.BigEndian.Uint64(r.Key)
			if string(r.Value) != string(ledgerValue(seq)) {
				res.bad++
			}
			seen[seq] = true
		})
	}
	for seq := range acked {
		if !seen[seq] {
			res.lost++
			res.missingByTopic[l.topicOf(seq)]++
		}
	}
	if pending > 0 && res.lost > 0 {
		res.unread = fmt.Sprintf("read %d records in 90s, %d partitions short of their end offsets (%d records in all); %d acknowledged not seen",
			got, pending, want, res.lost)
	}
	return res
}

// listEnds lists the end offsets of topics, asking again while a
// partition answers with a retriable error. Right after a leader election
// (a replication factor change ends with one) the new leader answers
// OFFSET_NOT_AVAILABLE until its high watermark catches up: a checker
// that gave up there reported an unread ledger where nothing was lost
// (seed 2, step 4). The provider's own offset reads ask again the same way.
func listEnds(ctx context.Context, adm *kadm.Client, topics []string) (kadm.ListedOffsets, error) {
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err == nil {
			err = ends.Error()
		}
		// A leader that has just been killed refuses connections until the
		// controller fences it and elects another (seed 22, a broker-kill
		// step): wait for that too.
		if err == nil || (!kerr.IsRetriable(err) && !errors.Is(err, syscall.ECONNREFUSED) && !strings.Contains(err.Error(), "connection refused")) {
			return ends, err
		}
		select {
		case <-ctx.Done():
			return ends, err
		case <-time.After(wait):
		}
	}
}

// group is a plain consumer group reading a topic for the whole soak.
type group struct {
	cancel   context.CancelFunc
	done     chan struct{}
	consumed atomic.Int64
}

func startGroup(servers []string, name, topic string) (*group, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(servers...), kgo.ConsumerGroup(name), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &group{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			g.consumed.Add(int64(fs.NumRecords()))
		}
	}()
	return g, nil
}

func (g *group) stop() {
	g.cancel()
	<-g.done
}
