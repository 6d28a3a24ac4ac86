package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RegisteredBroker is one broker as Kafka's metadata knows it.
type RegisteredBroker struct {
	ID     int32
	Rack   string
	Host   string
	Port   int32
	Fenced bool
}

// DescribeCluster asks the brokers for every registered broker, fenced ones
// included (DescribeCluster v2, KIP-1073), sorted by id. Kafka 3.9 answers
// at most v1, which lists only the unfenced brokers: a fenced registration is
// then not shown at all.
func DescribeCluster(ctx context.Context, cl *kgo.Client) ([]RegisteredBroker, error) {
	return describeVia(ctx, cl.Request)
}

func describeVia(ctx context.Context, request func(context.Context, kmsg.Request) (kmsg.Response, error)) ([]RegisteredBroker, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	kresp, err := request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp, ok := kresp.(*kmsg.DescribeClusterResponse)
	if !ok {
		return nil, fmt.Errorf("DescribeCluster: a %T came back", kresp)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = ": " + *resp.ErrorMessage
		}
		return nil, fmt.Errorf("DescribeCluster: %w%s", err, msg)
	}
	out := make([]RegisteredBroker, 0, len(resp.Brokers))
	for _, b := range resp.Brokers {
		rb := RegisteredBroker{ID: b.NodeID, Host: b.Host, Port: b.Port, Fenced: b.IsFenced}
		if b.Rack != nil {
			rb.Rack = *b.Rack
		}
		out = append(out, rb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// waitBrokerReady waits until the broker answers on its own listener and its
// own metadata lists it unfenced. The broker opens request processing only
// after the controller has unfenced it, so an answer from the new JVM itself
// cannot be the stale registration of a previous, killed incarnation, which
// other brokers may still list as unfenced until its session times out.
func (c *Cluster) waitBrokerReady(ctx context.Context, n *node) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()), kgo.DialTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	seed := cl.SeedBrokers()[0]
	began := time.Now()
	var last error
	for {
		if c.exited(n) {
			return c.startFailure(n, "exited during startup")
		}
		if gone := c.quorumLost(); gone != nil {
			return c.startFailure(gone, "exited while broker "+fmt.Sprint(n.id)+" was starting")
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		brokers, err := describeVia(rctx, seed.Request)
		cancel()
		if err == nil {
			for _, b := range brokers {
				if b.ID == n.id && !b.Fenced {
					c.opts.Logf("kafkatest: broker %d (rack %s, %s) unfenced after %v", n.id, n.rack, n.addr(), time.Since(began).Round(time.Millisecond))
					return nil
				}
			}
			err = fmt.Errorf("broker %d does not list itself unfenced yet (it lists %v)", n.id, brokers)
		}
		last = err
		if err := sleepCtx(ctx, pollInterval); err != nil {
			return fmt.Errorf("%w (last: %v)", c.startFailure(n, "not unfenced in time"), last)
		}
	}
}

// quorumLost returns an exited controller once a majority of the
// controllers has exited, so that no leader can be elected: a broker cannot
// start then. With one controller that is when it exits; a quorum of three
// survives one killed controller.
func (c *Cluster) quorumLost() *node {
	var gone []*node
	for _, n := range c.controllers {
		if c.exited(n) {
			gone = append(gone, n)
		}
	}
	if len(gone) > len(c.controllers)/2 {
		return gone[0]
	}
	return nil
}

func (c *Cluster) startFailure(n *node, what string) error {
	err := n.failure(what)
	if n.bindFailed() {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}

// waitClusterView waits until the cluster client's DescribeCluster lists
// every id in unfenced as unfenced and none of the ids in gone.
func (c *Cluster) waitClusterView(ctx context.Context, unfenced, gone []int32) error {
	var last []RegisteredBroker
	var lastErr error
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		brokers, err := DescribeCluster(rctx, c.client)
		cancel()
		if err == nil {
			last = brokers
			if viewMatches(brokers, unfenced, gone) {
				return nil
			}
		}
		lastErr = err
		if err := sleepCtx(ctx, pollInterval); err != nil {
			return fmt.Errorf("waiting for DescribeCluster to list brokers %v unfenced and %v gone: %w (last view %v, last error %v)",
				unfenced, gone, err, last, lastErr)
		}
	}
}

func viewMatches(brokers []RegisteredBroker, unfenced, gone []int32) bool {
	for _, id := range unfenced {
		i := slices.IndexFunc(brokers, func(b RegisteredBroker) bool { return b.ID == id })
		if i < 0 || brokers[i].Fenced {
			return false
		}
	}
	for _, id := range gone {
		if slices.ContainsFunc(brokers, func(b RegisteredBroker) bool { return b.ID == id }) {
			return false
		}
	}
	return true
}

func unregisterBroker(ctx context.Context, cl *kgo.Client, id int32) error {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("unregistering broker %d: %w", id, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = ": " + *resp.ErrorMessage
		}
		return fmt.Errorf("unregistering broker %d: %w%s", id, err, msg)
	}
	return nil
}

// FinalizedFeatures returns the cluster's finalized feature levels (e.g.
// metadata.version, streams.version) as a broker reports them in ApiVersions.
func FinalizedFeatures(ctx context.Context, cl *kgo.Client) (map[string]int16, error) {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("ApiVersions: %w", err)
	}
	if resp.FinalizedFeaturesEpoch < 0 {
		return nil, errors.New("ApiVersions: the broker reported no finalized features")
	}
	out := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		out[f.Name] = f.MaxVersionLevel
	}
	return out, nil
}
