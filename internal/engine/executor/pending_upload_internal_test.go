package executor

import (
	"strings"
	"testing"
)

// The note names at most five partitions and counts the rest, and says
// nothing when no partition is held.
func TestPendingUploadNote(t *testing.T) {
	if got := pendingUploadNote(nil); got != "" {
		t.Errorf("no partition: %q, want none", got)
	}
	got := pendingUploadNote([]string{"a-0", "a-1", "a-2", "a-3", "a-4", "a-5", "a-6"})
	for _, want := range []string{"to 7 partition(s) of tiered topics (a-0, a-1, a-2, a-3, a-4, and 2 more)", "until a record is written",
		"follower.fetch.last.tiered.offset.enable=false"} {
		if !strings.Contains(got, want) {
			t.Errorf("the note %q does not say %q", got, want)
		}
	}
}
