package engine_test

import (
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// Only a move that gives a flagged partition a new replica is listed: a
// new follower is what cannot start. A reorder of a flagged partition, and
// a new replica of an unflagged one, are not.
func TestPendingUploadUnknownMoves(t *testing.T) {
	c := engine.Cluster{Partitions: []engine.Partition{
		{Topic: "idle", Partition: 0, Replicas: []int32{1, 2}, PendingUploadUnknown: true},
		{Topic: "idle", Partition: 1, Replicas: []int32{2, 3}, PendingUploadUnknown: true},
		{Topic: "busy", Partition: 0, Replicas: []int32{1, 2}},
	}}
	p := &engine.Plan{Groups: []engine.Group{{Steps: []engine.Step{{Moves: []engine.Move{
		{Topic: "idle", Partition: 0, OldReplicas: []int32{1, 2}, NewReplicas: []int32{4, 2}, Adding: []int32{4}, Removing: []int32{1}},
		{Topic: "idle", Partition: 1, OldReplicas: []int32{2, 3}, NewReplicas: []int32{3, 2}},
		{Topic: "busy", Partition: 0, OldReplicas: []int32{1, 2}, NewReplicas: []int32{4, 2}, Adding: []int32{4}, Removing: []int32{1}},
	}}}}}}
	if got, want := engine.PendingUploadUnknownMoves(c, p), []string{"idle-0"}; !slices.Equal(got, want) {
		t.Errorf("PendingUploadUnknownMoves = %v, want %v", got, want)
	}
	if got := engine.PendingUploadUnknownMoves(c, nil); got != nil {
		t.Errorf("with no plan: %v, want none", got)
	}
}
