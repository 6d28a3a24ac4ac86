// Package report turns a plan preview or a recorded operation into the
// figures `kafkascale report` shows: per broker load before and after, the
// moves, and an operation's timeline. Data is what --output json prints and
// what the page draws; Render writes the page. It reads no cluster: the
// caller brings the preview or the record.
package report

import (
	"cmp"
	"slices"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// Data is everything the page shows, as numbers.
type Data struct {
	// Source is "plan" for a preview, "operation" for a record.
	Source    string    `json:"source"`
	ClusterID string    `json:"cluster_id,omitempty"`
	Generated time.Time `json:"generated"`
	// Operation names the record (Source "operation").
	Operation *OperationInfo `json:"operation,omitempty"`
	// TargetBrokerCount is the broker count the plan leads to.
	TargetBrokerCount int     `json:"target_broker_count"`
	AddBrokers        []int32 `json:"add_brokers"`
	RemoveBrokers     []int32 `json:"remove_brokers"`
	Moves             int     `json:"replica_moves"`
	Bytes             int64   `json:"bytes"`
	// RemoteBytes is what the moved partitions of tiered topics keep in
	// remote storage: a new replica does not copy it, so Bytes leaves it
	// out.
	RemoteBytes int64 `json:"remote_bytes"`
	Groups      int   `json:"groups"`
	// Throttle is the rate the estimate assumes, bytes/s per broker.
	Throttle int64 `json:"throttle"`
	// EstimatedSeconds is the whole apply's estimate (a preview), or the
	// plan's when it was recorded (an operation).
	EstimatedSeconds int64    `json:"estimated_seconds"`
	Estimate         string   `json:"estimate,omitempty"`
	Warnings         []string `json:"warnings"`
	// Brokers are sorted by rack, then id: the bars' order.
	Brokers     []Broker     `json:"brokers"`
	Pairs       []Pair       `json:"pairs"`
	GroupTotals []GroupTotal `json:"group_totals"`
	Timeline    *Timeline    `json:"timeline,omitempty"`
}

// OperationInfo names a recorded operation and where it stands.
type OperationInfo struct {
	ID          string    `json:"id"`
	Key         string    `json:"key"`
	Kind        string    `json:"kind"`
	Phase       string    `json:"phase"`
	StartedAt   time.Time `json:"started_at"`
	CompletedAt time.Time `json:"completed_at,omitzero"`
	LastError   string    `json:"last_error,omitempty"`
}

// Load is what a broker holds.
type Load struct {
	Replicas         int   `json:"replicas"`
	PreferredLeaders int   `json:"preferred_leaders"`
	Bytes            int64 `json:"bytes"`
}

// Broker is one broker before and after the plan, with its traffic.
type Broker struct {
	ID   int32  `json:"id"`
	Rack string `json:"rack"`
	// Joins and Leaves mark the brokers the change adds and removes.
	Joins    bool  `json:"joins,omitempty"`
	Leaves   bool  `json:"leaves,omitempty"`
	Before   Load  `json:"before"`
	After    Load  `json:"after"`
	MovesIn  int   `json:"moves_in"`
	MovesOut int   `json:"moves_out"`
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// Pair counts the replicas moved from one broker to another. From is -1
// for a replica added with none removed (a higher replication factor).
type Pair struct {
	From  int32 `json:"from"`
	To    int32 `json:"to"`
	Moves int   `json:"moves"`
	Bytes int64 `json:"bytes"`
}

// GroupTotal is one group of moves: they all finish before the next
// group's start, under the groups-in-turn schedule.
type GroupTotal struct {
	Group int   `json:"group"`
	Moves int   `json:"moves"`
	Bytes int64 `json:"bytes"`
}

// FromPreview is the report of a plan preview: c is executor.PreviewCost's
// answer, the one data.kafkascale_rebalance_plan shows.
func FromPreview(clusterID string, target int, c executor.Cost, now time.Time) Data {
	d := Data{Source: "plan", ClusterID: clusterID, Generated: now.UTC(), TargetBrokerCount: target,
		Moves: c.Moves, Bytes: c.Bytes, RemoteBytes: c.RemoteBytes, Throttle: c.ETA.Throttle, EstimatedSeconds: int64(c.ETA.Total().Seconds()),
		Estimate: c.ETA.String(), RemoveBrokers: nonNil(c.Leaving), AddBrokers: []int32{}, Warnings: []string{}}
	pv := c.Preview
	for _, b := range pv.AddBrokers {
		d.AddBrokers = append(d.AddBrokers, b.ID)
	}
	for _, note := range []string{pv.Healing, pv.Skew, pv.PendingUpload} {
		if note != "" {
			d.Warnings = append(d.Warnings, note)
		}
	}
	if pv.Plan != nil {
		d.Warnings = append(d.Warnings, pv.Plan.Warnings...)
		d.fill(pv.Plan)
	}
	if d.Throttle == 0 && pv.Plan != nil {
		d.Throttle = pv.Plan.ThrottleBytesPerSec
	}
	return d
}

// FromOperation is the report of a recorded operation, running or over.
func FromOperation(op *executor.Operation, now time.Time) Data {
	d := Data{Source: "operation", Generated: now.UTC(), TargetBrokerCount: op.TargetBrokerCount,
		RemoveBrokers: nonNil(op.RemoveBrokers), AddBrokers: []int32{}, Warnings: []string{}, Throttle: op.ThrottleRate,
		Operation: &OperationInfo{ID: op.ID, Key: op.Key, Kind: string(op.Kind), Phase: string(op.Phase),
			StartedAt: op.StartedAt, CompletedAt: op.CompletedAt, LastError: op.LastError}}
	if p := op.Plan; p != nil {
		d.Moves, d.Bytes, d.RemoteBytes, d.EstimatedSeconds = p.ReplicaMoves, p.TotalBytes, p.RemoteBytes, p.EstimatedSeconds
		d.Warnings = append(d.Warnings, p.Warnings...)
		d.fill(p)
		for _, b := range p.Brokers {
			if b.Added {
				d.AddBrokers = append(d.AddBrokers, b.Broker)
			}
		}
	}
	d.Timeline = timeline(op)
	return d
}

// fill sets the brokers, pairs and groups of plan p.
func (d *Data) fill(p *engine.Plan) {
	traffic := p.Traffic()
	d.Groups = len(p.Groups)
	d.Brokers = make([]Broker, 0, len(p.Brokers))
	for _, b := range p.Brokers {
		tr := traffic[b.Broker]
		d.Brokers = append(d.Brokers, Broker{ID: b.Broker, Rack: b.Rack, Joins: b.Added, Leaves: b.Removed,
			Before: load(b.Before), After: load(b.After),
			MovesIn: tr.MovesIn, MovesOut: tr.MovesOut, BytesIn: tr.BytesIn, BytesOut: tr.BytesOut})
	}
	slices.SortFunc(d.Brokers, func(a, b Broker) int { return cmp.Or(cmp.Compare(a.Rack, b.Rack), cmp.Compare(a.ID, b.ID)) })
	pairs := map[[2]int32]*Pair{}
	d.GroupTotals = make([]GroupTotal, len(p.Groups))
	for g := range p.Groups {
		d.GroupTotals[g].Group = g + 1
	}
	p.EachMove(func(g, _ int, m engine.Move) {
		d.GroupTotals[g].Moves += len(m.Adding)
		d.GroupTotals[g].Bytes += m.Bytes
		if len(m.Adding) == 0 {
			return
		}
		// As Plan.Traffic counts it: a move copies its partition once to
		// each replica it adds, and each added replica takes the place of
		// a removed one, in order.
		per := m.Bytes / int64(len(m.Adding))
		for i, to := range m.Adding {
			from := int32(-1)
			if i < len(m.Removing) {
				from = m.Removing[i]
			}
			k := [2]int32{from, to}
			if pairs[k] == nil {
				pairs[k] = &Pair{From: from, To: to}
			}
			pairs[k].Moves++
			pairs[k].Bytes += per
		}
	})
	d.Pairs = make([]Pair, 0, len(pairs))
	for _, pr := range pairs {
		d.Pairs = append(d.Pairs, *pr)
	}
	slices.SortFunc(d.Pairs, func(a, b Pair) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
}

func load(l engine.Load) Load {
	return Load{Replicas: l.Replicas, PreferredLeaders: l.Leaders, Bytes: l.Bytes}
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return slices.Clone(ids)
}
