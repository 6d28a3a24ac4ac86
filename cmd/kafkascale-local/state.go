package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// state is what the supervisor tells the other commands, in <dir>/state.json.
// It never holds the token.
type state struct {
	SupervisorPID   int      `json:"supervisor_pid"`
	SupervisorStart uint64   `json:"supervisor_start"`
	Ready           bool     `json:"ready"`
	ClusterID       string   `json:"cluster_id"`       // the scaling API's id
	KafkaClusterID  string   `json:"kafka_cluster_id"` // Kafka's own
	BootstrapServer []string `json:"bootstrap_servers"`
	APIURL          string   `json:"api_url"`
	ClusterDir      string   `json:"cluster_dir"`
	InitialBrokers  int      `json:"initial_brokers"`
	Racks           []string `json:"racks"`
}

func statePath(dir string) string       { return filepath.Join(dir, "state.json") }
func logPath(dir string) string         { return filepath.Join(dir, "kafkascale-local.log") }
func clusterDir(dir string) string      { return filepath.Join(dir, "cluster") }
func absDir(dir string) (string, error) { return filepath.Abs(dir) }

// readState returns the state in dir, or nil when there is none.
func readState(dir string) (*state, error) {
	raw, err := os.ReadFile(statePath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", statePath(dir), err)
	}
	return &st, nil
}

// writeState replaces the state file atomically, so readers never see half.
func writeState(dir string, st *state) error {
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".state-*.json")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), statePath(dir))
}

func (st *state) supervisorAlive() bool {
	return st != nil && kafkatest.ProcessAlive(st.SupervisorPID, st.SupervisorStart)
}
