//go:build linux

package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// These checks ask the cluster itself, never Terraform's state.

// offlinePartitions lists the partitions without a leader.
func offlinePartitions(ctx context.Context, adm *kadm.Client) ([]string, error) {
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			if p.Leader < 0 {
				// The replicas and the ISR left say whether a fault made
				// it offline (its last in-sync replica killed) or a move.
				out = append(out, fmt.Sprintf("%s-%d (replicas %v, ISR %v)", td.Topic, p.Partition, p.Replicas, p.ISR))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// dynamicBrokerConfigs lists the dynamic broker configs of the running
// brokers whose key and value match, as "broker 4 key=value".
func dynamicBrokerConfigs(ctx context.Context, adm *kadm.Client, running []int32, match func(key, value string) bool) ([]string, error) {
	bcs, err := adm.DescribeBrokerConfigs(ctx, running...)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rc := range bcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("broker %s: %w", rc.Name, rc.Err)
		}
		for _, cfg := range rc.Configs {
			if cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig && match(cfg.Key, cfg.MaybeValue()) {
				out = append(out, fmt.Sprintf("broker %s %s=%s", rc.Name, cfg.Key, cfg.MaybeValue()))
			}
		}
	}
	return out, nil
}

// throttlesSet lists the replication throttles left on running brokers
// (leader/follower.replication.throttled.rate) and on topics
// (leader/follower.replication.throttled.replicas).
func throttlesSet(ctx context.Context, adm *kadm.Client, running []int32) ([]string, error) {
	out, err := dynamicBrokerConfigs(ctx, adm, running, func(key, _ string) bool {
		return strings.Contains(key, "replication.throttled")
	})
	if err != nil {
		return nil, err
	}
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, err
	}
	tcs, err := adm.DescribeTopicConfigs(ctx, topics.Names()...)
	if err != nil {
		return nil, err
	}
	for _, rc := range tcs {
		for _, cfg := range rc.Configs {
			if strings.Contains(cfg.Key, "replication.throttled") && cfg.Source == kmsg.ConfigSourceDynamicTopicConfig && cfg.MaybeValue() != "" {
				out = append(out, fmt.Sprintf("topic %s %s", rc.Name, cfg.Key))
			}
		}
	}
	return out, nil
}

// cordonsSet lists the running brokers that keep cordoned.log.dirs.
func cordonsSet(ctx context.Context, adm *kadm.Client, running []int32) ([]string, error) {
	return dynamicBrokerConfigs(ctx, adm, running, func(key, value string) bool {
		return key == kafka.ConfigCordonedLogDirs && value != ""
	})
}

// leaseHolders replays the lease log and lists the claims still live at
// now: a claim whose holder died lives until its last heartbeat plus its
// expiry, which the replay only judges when a later record arrives. The
// claim of an apply this soak killed is left out: it stays until it
// expires, by design (a holder on another machine cannot be known dead
// sooner), and the next apply that needs the lease waits it out or, for
// the same operation, takes it over (tests of the lease prove both).
// Found by seed 22: a killed partition growth whose revert had nothing to
// do, so took no lease, was reported at once.
func leaseHolders(ctx context.Context, cl *kafka.Client, now time.Time) ([]string, error) {
	recs, err := cl.LeaseLog().Since(ctx, now.Add(-executor.LeaseWindow))
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	var out []string
	for _, c := range executor.ReplayLease(recs).Queue() {
		if c.Holder.Host == host && c.Holder.PID > 0 && syscall.Kill(c.Holder.PID, 0) == syscall.ESRCH {
			continue
		}
		if c.Expires().After(now) {
			out = append(out, fmt.Sprintf("%s (%s, %s pid %d)", c.Holder.Operation, c.Holder.Resource, c.Holder.Host, c.Holder.PID))
		}
	}
	return out, nil
}

// unfinishedOperations lists the operations recorded and not done, paused
// ones included, as "cluster/… reassign 3/9 moves".
func unfinishedOperations(ctx context.Context, cl *kafka.Client) ([]string, error) {
	ops, err := cl.Operations().List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, op := range ops {
		if op == nil || op.Done() {
			continue
		}
		moves := 0
		if op.Plan != nil {
			moves = op.Plan.ReplicaMoves
		}
		s := fmt.Sprintf("%s %s %d/%d moves", op.Key, op.Phase, op.MovesDone, moves)
		if !op.PausedAt.IsZero() {
			s += " paused"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out, nil
}

// rackImbalance lists the running brokers whose replica count strays more
// than one from the mean of their rack, internal topics counted.
func rackImbalance(ctx context.Context, adm *kadm.Client) ([]string, error) {
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	rackOf := map[int32]string{}
	for _, b := range md.Brokers {
		if b.Rack != nil {
			rackOf[b.NodeID] = *b.Rack
		}
	}
	count := map[int32]int{}
	for id := range rackOf {
		count[id] = 0
	}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			for _, r := range p.Replicas {
				if _, live := rackOf[r]; live {
					count[r]++
				}
			}
		}
	}
	sum, members := map[string]int{}, map[string]int{}
	for id, n := range count {
		sum[rackOf[id]] += n
		members[rackOf[id]]++
	}
	var out []string
	for _, id := range slices.Sorted(maps.Keys(count)) {
		r := rackOf[id]
		mean := float64(sum[r]) / float64(members[r])
		if math.Abs(float64(count[id])-mean) > 1 {
			out = append(out, fmt.Sprintf("broker %d (rack %s) %d vs mean %.1f", id, r, count[id], mean))
		}
	}
	return out, nil
}

// demotedLeading lists the partitions a demoted broker is the preferred
// leader of that another live replica could lead. The actual leader is not
// checked: a broker killed by a fault since the apply hands its
// leaderships to any replica in sync, a demoted one included, until Kafka
// elects the preferred leaders again.
func demotedLeading(ctx context.Context, adm *kadm.Client, demoted []int32) ([]string, error) {
	if len(demoted) == 0 {
		return nil, nil
	}
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, err
	}
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
	}
	var out []string
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			if len(p.Replicas) == 0 || !slices.Contains(demoted, p.Replicas[0]) {
				continue
			}
			for _, b := range p.Replicas {
				if live[b] && !slices.Contains(demoted, b) {
					out = append(out, fmt.Sprintf("demoted broker %d is the preferred leader of %s p%d (replicas %v), which broker %d could lead",
						p.Replicas[0], td.Topic, p.Partition, p.Replicas, b))
					break
				}
			}
		}
	}
	return out, nil
}
