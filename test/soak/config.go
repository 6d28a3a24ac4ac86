//go:build linux

package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The soak's throttle: low enough that a move of a few MiB takes seconds,
// so that a fault has an apply in flight to hit.
const throttle = 1 << 20

// longTimeout is the update timeout of every step without an apply
// timeout fault.
const longTimeout = "30m"

// clusterConfig is what working directory A declares.
type clusterConfig struct {
	Brokers          int
	RemoveBrokerIDs  []int32
	KeepBalanced     bool
	DemoteBrokerIDs  []int32
	MaxApplyDuration string // "" for none
	UpdateTimeout    string
}

// topicConfig is one kafkascale_topic of working directory B.
type topicConfig struct {
	Partitions  int
	RF          int
	Compacted   bool
	Keyed       bool // static_partitioning: its producer keys every record
	Present     bool
	Destroyable bool // only the extra topic is created and destroyed
}

// desired is both working directories' configuration.
type desired struct {
	Cluster       clusterConfig
	Topics        map[string]topicConfig
	TopicsTimeout string
	// StreamsPartitions is the partition count B's kafkascale_streams_app
	// declares.
	StreamsPartitions int32
}

func (d desired) clone() desired {
	c := d
	c.Cluster.RemoveBrokerIDs = slices.Clone(d.Cluster.RemoveBrokerIDs)
	c.Cluster.DemoteBrokerIDs = slices.Clone(d.Cluster.DemoteBrokerIDs)
	c.Topics = maps.Clone(d.Topics)
	return c
}

func initialDesired(brokers int) desired {
	return desired{
		Cluster: clusterConfig{Brokers: brokers, UpdateTimeout: longTimeout},
		Topics: map[string]topicConfig{
			"keyed":     {Partitions: 6, RF: 3, Keyed: true, Present: true},
			"plain":     {Partitions: 6, RF: 3, Present: true},
			"compacted": {Partitions: 3, RF: 3, Compacted: true, Present: true},
			"extra":     {Partitions: 3, RF: 2, Present: false, Destroyable: true},
		},
		TopicsTimeout:     longTimeout,
		StreamsPartitions: streamsPartitions,
	}
}

func providerBlock(servers []string) string {
	q := make([]string, len(servers))
	for i, s := range servers {
		q[i] = fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf(`terraform {
  required_providers {
    kafkascale = { source = "kafkascale/kafkascale" }
  }
}

provider "kafkascale" {
  bootstrap_servers = [%s]
}
`, strings.Join(q, ", "))
}

// clusterHCL renders A's main.tf, in the shape of the provider's
// acceptance tests (a low fixed throttle, the HTTP scaling API).
func clusterHCL(servers []string, apiURL, token string, c clusterConfig) string {
	var extra, rebalance string
	if len(c.RemoveBrokerIDs) > 0 {
		ids := make([]string, len(c.RemoveBrokerIDs))
		for i, id := range c.RemoveBrokerIDs {
			ids[i] = fmt.Sprint(id)
		}
		extra = fmt.Sprintf("\n  remove_broker_ids = [%s]", strings.Join(ids, ", "))
	}
	if len(c.DemoteBrokerIDs) > 0 {
		ids := make([]string, len(c.DemoteBrokerIDs))
		for i, id := range c.DemoteBrokerIDs {
			ids[i] = fmt.Sprint(id)
		}
		extra += fmt.Sprintf("\n  demote_broker_ids = [%s]", strings.Join(ids, ", "))
	}
	if c.KeepBalanced {
		rebalance += "\n    keep_balanced    = true"
	}
	if c.MaxApplyDuration != "" {
		rebalance += fmt.Sprintf("\n    max_apply_duration = %q", c.MaxApplyDuration)
	}
	return providerBlock(servers) + fmt.Sprintf(`
resource "kafkascale_cluster" "soak" {
  broker_count = %d%s
  scaling {
    http {
      endpoint   = %q
      cluster_id = "local"
      token      = %q
    }
  }
  rebalance {
    initial_throttle = %d
    min_throttle     = %d%s
  }
  timeouts {
    update = %q
  }
}
`, c.Brokers, extra, apiURL, token, throttle, throttle, rebalance, c.UpdateTimeout)
}

// topicsHCL renders B's main.tf: every present topic.
func topicsHCL(servers []string, topics map[string]topicConfig, timeout string) string {
	var b strings.Builder
	b.WriteString(providerBlock(servers))
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		t := topics[name]
		if !t.Present {
			continue
		}
		cfg := `"min.insync.replicas" = "1"`
		if t.RF >= 3 {
			cfg = `"min.insync.replicas" = "2"`
		}
		if t.Compacted {
			cfg += `, "cleanup.policy" = "compact"`
		}
		static := ""
		if t.Keyed {
			static = "\n  static_partitioning = true"
		}
		fmt.Fprintf(&b, `
resource "kafkascale_topic" %q {
  name               = %q
  partitions         = %d
  replication_factor = %d
  throttle           = %d
  config             = { %s }%s
  timeouts {
    create = %q
    update = %q
    delete = %q
  }
}
`, name, name, t.Partitions, t.RF, throttle, cfg, static, timeout, timeout, timeout)
	}
	return b.String()
}
