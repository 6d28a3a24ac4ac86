package engine

import (
	"errors"
	"slices"
	"testing"
)

func TestCheckBrokerCount(t *testing.T) {
	if err := CheckBrokerCount("t", 3, []int32{1, 2, 3}); err != nil {
		t.Fatalf("rf 3 on 3 live brokers: %v", err)
	}
	err := CheckBrokerCount("t", 3, []int32{1, 4})
	var bc *BrokerCountError
	if !errors.As(err, &bc) {
		t.Fatalf("rf 3 on 2 live brokers: got %v, want a *BrokerCountError", err)
	}
	if bc.Topic != "t" || bc.ReplicationFactor != 3 || !slices.Equal(bc.Live, []int32{1, 4}) {
		t.Fatalf("error data %+v", bc)
	}
}

func TestCheckMinInsync(t *testing.T) {
	for _, tc := range []struct {
		configs map[string]string
		rf      int
		want    *MinInsyncError
	}{
		{nil, 1, nil},
		{map[string]string{"min.insync.replicas": "2"}, 2, nil},
		{map[string]string{"min.insync.replicas": "x"}, 1, nil}, // Kafka names it
		{map[string]string{"min.insync.replicas": "3"}, 2, &MinInsyncError{Topic: "t", MinInsync: 3, ReplicationFactor: 2}},
	} {
		err := CheckMinInsync("t", tc.configs, tc.rf)
		var mi *MinInsyncError
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%v rf %d: unexpected %v", tc.configs, tc.rf, err)
		case tc.want != nil && (!errors.As(err, &mi) || *mi != *tc.want):
			t.Errorf("%v rf %d: got %v, want %+v", tc.configs, tc.rf, err, tc.want)
		}
	}
}
