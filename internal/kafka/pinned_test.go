package kafka

import (
	"context"
	"testing"
)

// A broker found lagging is never read from again by this client, even
// though it is the lowest live id; a read that fails only re-picks.
func TestPinnedBrokerSkipsLaggingBrokers(t *testing.T) {
	live := func(context.Context) ([]int32, error) { return []int32{4, 7, 10}, nil }
	var p pinnedBroker
	get := func() int32 {
		t.Helper()
		b, err := p.get(context.Background(), live)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if b := get(); b != 4 {
		t.Fatalf("first pick %d, want the lowest live id 4", b)
	}
	p.forget(4)
	if b := get(); b != 4 {
		t.Fatalf("after a failed read, pick %d, want 4 again", b)
	}
	p.lagging(4)
	if b := get(); b != 7 {
		t.Fatalf("after 4 lagged, pick %d, want 7", b)
	}
	p.forget(7)
	if b := get(); b != 7 {
		t.Fatalf("after a failed read from 7, pick %d, want 7 (4 still lags)", b)
	}
	p.lagging(7)
	p.lagging(10)
	if b := get(); b != 4 {
		t.Fatalf("with every broker lagging, pick %d, want the lowest live id 4 rather than none", b)
	}
}
