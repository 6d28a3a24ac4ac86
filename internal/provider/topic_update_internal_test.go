package provider

import (
	"errors"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// The executor says which step of a topic's update failed; the provider
// explains each as it did when it ran the steps itself.
func TestUpdateDiagnosticsPerStep(t *testing.T) {
	boom := errors.New("boom")
	fail := func(s executor.UpdateStep, err error) error { return &executor.UpdateTopicError{Step: s, Err: err} }
	if got, want := updateDiagnostics("t", 2, 3, 6, fail(executor.StepConfigs, boom)), topicKafkaError("change the configs of topic t", boom); !got.Equal(want) {
		t.Errorf("configs: %v, want %v", got, want)
	}
	if got := updateDiagnostics("t", 2, 3, 6, fail(executor.StepReplicationFactor, errReported)); len(got) != 0 {
		t.Errorf("a failure already reported is reported again: %v", got)
	}
	if got, want := updateDiagnostics("t", 2, 3, 6, fail(executor.StepReplicationFactor, boom)),
		operationDiagnostics(replicationFactorTarget("t", 2), nil, boom); !got.Equal(want) {
		t.Errorf("replication factor: %v, want %v", got, want)
	}
	got := updateDiagnostics("t", 2, 3, 6, fail(executor.StepReplicasInSync, boom))
	want := "The reassignment of topic t to 2 replicas completed, but while waiting for every broker to show every " +
		"partition with 2 in-sync replicas the apply gave up: boom."
	if len(got) != 1 || got[0].Summary() != "Replicas not in sync after the change" || got[0].Detail() != want {
		t.Errorf("in sync: %v", got)
	}
	if got, want := updateDiagnostics("t", 2, 3, 6, fail(executor.StepGrowth, boom)), operationDiagnostics(growthTarget("t", 3, 6), nil, boom); !got.Equal(want) {
		t.Errorf("growth: %v, want %v", got, want)
	}
}
