package kafka_test

import (
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

func TestReplicaCopyBytes(t *testing.T) {
	o := kafka.TieredOffsets{LogStart: 0, LocalLogStart: 1500, LastTiered: 1899, End: 2000}
	for _, tc := range []struct {
		name            string
		o               kafka.TieredOffsets
		fetchLastTiered bool
		want            int64
	}{
		{"KIP-405: the whole local log", o, false, 500},
		{"KIP-1023: the offsets past the last tiered one", o, true, 100},
		{"KIP-1023, nothing tiered yet: the whole local log", kafka.TieredOffsets{LastTiered: -1, End: 2000}, true, 500},
		{"KIP-1023, all tiered but the empty active segment", kafka.TieredOffsets{LocalLogStart: 1500, LastTiered: 1999, End: 2000}, true, 0},
	} {
		if got := kafka.ReplicaCopyBytes(tc.o, 500, tc.fetchLastTiered); got != tc.want {
			t.Errorf("%s: ReplicaCopyBytes(%+v, 500, %v) = %d, want %d", tc.name, tc.o, tc.fetchLastTiered, got, tc.want)
		}
	}
}

func TestRemoteOnlyBytes(t *testing.T) {
	for _, tc := range []struct {
		o    kafka.TieredOffsets
		want int64
	}{
		{kafka.TieredOffsets{LogStart: 0, LocalLogStart: 1500, LastTiered: 1899, End: 2000}, 1500},
		{kafka.TieredOffsets{LogStart: 1000, LocalLogStart: 1500, LastTiered: 1899, End: 2000}, 500},
		{kafka.TieredOffsets{LogStart: 0, LocalLogStart: 0, LastTiered: -1, End: 2000}, 0},
		{kafka.TieredOffsets{LogStart: 0, LocalLogStart: 2000, LastTiered: 1999, End: 2000}, 0},
	} {
		if got := kafka.RemoteOnlyBytes(tc.o, 500); got != tc.want {
			t.Errorf("RemoteOnlyBytes(%+v, 500) = %d, want %d", tc.o, got, tc.want)
		}
	}
}

// A KIP-1023 follower starts at the earliest pending upload offset; a
// leader with segments in remote storage and none pending (an idle
// partition whose last segment was tiered and deleted locally) has none to
// give, and on Kafka 4.4 the follower waits for a write.
func TestPendingUploadUnknown(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    kafka.TieredOffsets
		want bool
	}{
		{"records pending upload", kafka.TieredOffsets{LastTiered: 1899, PendingUpload: 1900, End: 2000}, false},
		{"nothing tiered yet", kafka.TieredOffsets{LastTiered: -1, PendingUpload: -1, End: 2000}, false},
		{"the leader did not answer", kafka.TieredOffsets{LocalLogStart: 2000, LastTiered: 1999, PendingUpload: kafka.PendingUploadNotAnswered, End: 2000}, false},
		{"idle: everything tiered, nothing pending", kafka.TieredOffsets{LocalLogStart: 2000, LastTiered: 1999, PendingUpload: -1, End: 2000}, true},
	} {
		if got := tc.o.PendingUploadUnknown(); got != tc.want {
			t.Errorf("%s: PendingUploadUnknown(%+v) = %v, want %v", tc.name, tc.o, got, tc.want)
		}
	}
	var o kafka.TieredOffsets
	o.Set(kafka.TimestampEarliestPendingUpload, 17)
	if o.PendingUpload != 17 {
		t.Errorf("Set(TimestampEarliestPendingUpload, 17) left PendingUpload %d", o.PendingUpload)
	}
}
