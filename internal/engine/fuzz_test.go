package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// byteReader hands out fuzz bytes; past the end it gives zeros.
type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) next() byte {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

// decodeCase turns arbitrary bytes into a small planner input. Most inputs
// are valid, so that planning itself is fuzzed; a few bytes switch on bad
// input: duplicate and negative ids, unknown replicas, negative sizes, empty
// clusters, options out of range.
func decodeCase(data []byte) (engine.Cluster, engine.Change, engine.Options) {
	r := &byteReader{b: data}
	var c engine.Cluster
	var ch engine.Change
	racks := []string{"", "a", "b", "c", "z1/a", "z2/b", "z1/c"}
	id := func(k int) int32 {
		// Past the end of the input the reader gives zeros, which must
		// mean valid input; bad input takes high values.
		switch b := r.next(); b % 32 {
		case 31:
			return -1
		case 30:
			return int32(b % 4) // likely a duplicate
		}
		return int32(k)
	}
	broker := func(k int) engine.Broker {
		b := engine.Broker{ID: id(k), Rack: racks[int(r.next())%len(racks)], Alive: r.next()%8 != 7}
		if v := r.next(); v%3 != 0 {
			b.CapacityBytes = int64(v) * 100
			b.UsedBytes = int64(r.next()) * 10
		}
		if r.next()%64 == 63 {
			b.CapacityBytes = -1
		}
		return b
	}
	nb := int(r.next() % 9)
	for k := range nb {
		c.Brokers = append(c.Brokers, broker(k))
	}
	for k := range int(r.next() % 32) {
		p := engine.Partition{
			Topic:     []string{"t0", "t1", "t2"}[r.next()%3],
			Partition: int32(k),
			SizeBytes: int64(r.next()) * 3,
		}
		switch b := r.next(); b % 64 {
		case 63:
			p.Topic = ""
		case 62:
			p.SizeBytes = -p.SizeBytes - 1
		case 61:
			p.Partition = -1
		}
		// Distinct known brokers, mostly.
		start, rf := int(r.next()), 1+int(r.next()%3)
		for j := range rf {
			rep := int32(start+j) % 10
			if nb > 0 {
				rep = int32((start + j) % nb)
			}
			if r.next()%64 == 63 {
				rep = 9
			}
			p.Replicas = append(p.Replicas, rep)
		}
		c.Partitions = append(c.Partitions, p)
	}
	for k := range int(r.next() % 3) {
		ch.AddBrokers = append(ch.AddBrokers, broker(20+k))
	}
	for range r.next() % 3 {
		ch.RemoveBrokers = append(ch.RemoveBrokers, int32(r.next()%byte(max(1, nb+1))))
	}
	if n := r.next(); n%4 == 3 {
		ch.ReplicationFactor = map[string]int{fmt.Sprintf("t%d", n%3): int(r.next()%5) - 1}
	}
	o := engine.Options{
		MaxMovesPerStep:             1 + int(r.next()%10),
		MaxMovesPerBroker:           1 + int(r.next()%4),
		MaxReplicaMovesPerPartition: 1 + int(r.next()%3),
		MinFreeDiskPercent:          float64(r.next() % 40),
		MaxDiskSkewPercent:          1 + float64(r.next()%30),
		ThrottleBytesPerSec:         1 + int64(r.next()),
	}
	if r.next()%32 == 31 {
		o.MaxMovesPerBroker = -1
		o.MinFreeDiskPercent = 150
	}
	if r.next()%2 == 0 {
		o.Awareness = engine.Awareness{Separator: "/", Dimensions: []string{"zone", "rack"}}
	}
	return c, ch, o
}

// FuzzPlanReassignment: any input gives a plan that holds up, or an input or
// infeasibility error; never a panic.
func FuzzPlanReassignment(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 1, 10, 0, 1, 2, 2, 20, 0, 1, 3, 3, 30, 0, 1, 4, 0, 0, 5, 2, 1, 2, 3, 1, 1, 0, 0, 5, 2, 3, 1, 0, 0})
	f.Add([]byte{6, 1, 1, 50, 3, 1, 2, 2, 50, 3, 1, 3, 3, 50, 3, 1, 4, 1, 50, 3, 1, 5, 2, 50, 3, 1, 6, 3, 50, 3, 1,
		8, 0, 1, 9, 3, 1, 2, 3, 0, 2, 8, 3, 2, 3, 4, 1, 3, 7, 3, 4, 5, 6, 1, 7, 1, 1, 1, 1, 2, 4, 0, 1, 2, 2, 1, 10, 5, 10, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, ch, o := decodeCase(data)
		p, err := engine.PlanReassignment(c, ch, o)
		if err != nil {
			var in *engine.InputError
			var inf *engine.InfeasibleError
			if !errors.As(err, &in) && !errors.As(err, &inf) {
				t.Fatalf("error of unexpected type %T: %v", err, err)
			}
			if p != nil {
				t.Fatalf("a plan and an error")
			}
			return
		}
		o = o.WithDefaults()
		rc := randomCase{c: c, ch: ch, o: o}
		checkPlan(t, rc, p)
		// Deterministic.
		again, err := engine.PlanReassignment(c, ch, o)
		if err != nil || !slices.EqualFunc(again.Target, p.Target, func(a, b engine.Partition) bool {
			return a.Topic == b.Topic && a.Partition == b.Partition && slices.Equal(a.Replicas, b.Replicas)
		}) {
			t.Fatalf("second run differs: %v", err)
		}
	})
}
