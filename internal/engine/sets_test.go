package engine_test

import (
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

func TestSameMembers(t *testing.T) {
	cases := []struct {
		a, b []int32
		want bool
	}{
		{nil, nil, true},
		{[]int32{1, 2, 3}, []int32{3, 1, 2}, true},
		{[]int32{1, 2}, []int32{1, 2, 3}, false},
		{[]int32{1, 1, 2}, []int32{1, 2, 2}, false},
		{[]int32{4}, []int32{5}, false},
	}
	for _, c := range cases {
		if got := engine.SameMembers(c.a, c.b); got != c.want {
			t.Errorf("SameMembers(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
