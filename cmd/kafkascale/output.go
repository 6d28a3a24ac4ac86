package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// outputFormat is what --output chooses: text for people, json for scripts.
type outputFormat string

const (
	outputText outputFormat = "text"
	outputJSON outputFormat = "json"
)

func (o *outputFormat) String() string { return string(*o) }
func (o *outputFormat) Type() string   { return "format" }
func (o *outputFormat) Set(s string) error {
	switch f := outputFormat(s); f {
	case outputText, outputJSON:
		*o = f
		return nil
	default:
		return fmt.Errorf("%q is not an output format: text or json", s)
	}
}

// registerOutput adds --output (-o) to a command's flags, text by default.
func registerOutput(fs *pflag.FlagSet, o *outputFormat) {
	*o = outputText
	fs.VarP(o, "output", "o", "output format: text, or json for scripts")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// optionalTime is null in JSON for a time not reached yet.
func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// orEmpty makes a nil slice an empty JSON array: a script iterates over it
// without a null check.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// operationJSON is one operation as `operations --output json` lists it:
// the record's own figures, as the text list shows them.
type operationJSON struct {
	ID         string `json:"id"`
	Key        string `json:"key"`
	Kind       string `json:"kind"`
	Phase      string `json:"phase"`
	Done       bool   `json:"done"`
	Paused     bool   `json:"paused"`
	Group      int    `json:"group"`
	Groups     int    `json:"groups"`
	MovesDone  int    `json:"moves_done"`
	Moves      int    `json:"moves"`
	BytesDone  int64  `json:"bytes_done"`
	Bytes      int64  `json:"bytes"`
	ETASeconds int64  `json:"eta_seconds"`
	// ProjectedETASeconds is the re-estimate from the pace the copy has
	// kept, as of ProjectedAt; null until the pace is known.
	ProjectedETASeconds *int64     `json:"projected_eta_seconds"`
	ProjectedAt         *time.Time `json:"projected_at"`
	// The times are UTC; completed_at is null while the operation runs.
	StartedAt   time.Time  `json:"started_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at"`
	LastError   string     `json:"last_error"`
}

func operationView(op *executor.Operation, p executor.Progress) operationJSON {
	v := operationJSON{
		ID: op.ID, Key: op.Key, Kind: string(op.Kind), Phase: string(op.Phase), Done: op.Done(), Paused: op.Paused(),
		Group: p.Group, Groups: p.Groups, MovesDone: p.MovesDone, Moves: p.Moves, BytesDone: p.BytesDone, Bytes: p.Bytes,
		ETASeconds: int64(p.ETA.Round(time.Second) / time.Second),
		StartedAt:  op.StartedAt.UTC(), UpdatedAt: op.UpdatedAt.UTC(), CompletedAt: optionalTime(op.CompletedAt), LastError: op.LastError,
	}
	if p.Projected > 0 {
		secs := int64(p.Projected.Round(time.Second) / time.Second)
		v.ProjectedETASeconds, v.ProjectedAt = &secs, optionalTime(p.ProjectedAt)
	}
	return v
}

type orphanJSON struct {
	Operation       string                       `json:"operation"`
	Key             string                       `json:"key"`
	Brokers         []int32                      `json:"brokers"`
	RateBytesPerSec int64                        `json:"rate_bytes_per_sec"`
	Replicas        []executor.ThrottledReplicas `json:"throttled_replicas"`
}

type operationsJSON struct {
	Operations        []operationJSON `json:"operations"`
	OrphanedThrottles []orphanJSON    `json:"orphaned_throttles"`
}

// writeOperationsJSON is writeOperations for scripts: one JSON document,
// in the same order.
func writeOperationsJSON(w io.Writer, ops []*executor.Operation) error {
	out := operationsJSON{Operations: []operationJSON{}, OrphanedThrottles: []orphanJSON{}}
	for _, op := range sortOperations(ops) {
		out.Operations = append(out.Operations, operationView(op, op.Progress(nil)))
	}
	for _, o := range executor.OrphanedThrottles(ops) {
		out.OrphanedThrottles = append(out.OrphanedThrottles, orphanJSON{Operation: o.Operation, Key: o.Key,
			Brokers: orEmpty(o.Brokers), RateBytesPerSec: o.Rate, Replicas: orEmpty(o.Replicas)})
	}
	return writeJSON(w, out)
}

// operationDetailJSON is `operation show --output json`: the list's fields
// and the rest of what the text record shows.
type operationDetailJSON struct {
	operationJSON
	TargetBrokerCount   int                          `json:"target_broker_count"`
	BrokersBefore       []int32                      `json:"brokers_before"`
	RemoveBrokers       []int32                      `json:"remove_brokers"`
	DeadBrokers         []int32                      `json:"dead_brokers"`
	ReusedBrokers       []int32                      `json:"reused_brokers"`
	PausedAt            *time.Time                   `json:"paused_at"`
	StepsSubmitted      int                          `json:"steps_submitted"`
	ThrottleBytesPerSec int64                        `json:"throttle_bytes_per_sec"`
	ThrottleHistory     []executor.ThrottleChange    `json:"throttle_history"`
	ThrottledBrokers    []int32                      `json:"throttled_brokers"`
	ThrottledReplicas   []executor.ThrottledReplicas `json:"throttled_replicas"`
	// Plan is null until the plan is made (after the new brokers register).
	Plan *planJSON `json:"plan"`
}

type planJSON struct {
	Moves               int                       `json:"moves"`
	TotalBytes          int64                     `json:"total_bytes"`
	EstimatedSeconds    int64                     `json:"estimated_seconds"`
	ThrottleBytesPerSec int64                     `json:"throttle_bytes_per_sec"`
	GroupsInTurn        bool                      `json:"groups_in_turn"`
	LeaderReorders      int                       `json:"leader_reorders"`
	Groups              []groupJSON               `json:"groups"`
	Brokers             []engine.BrokerProjection `json:"brokers"`
	Warnings            []string                  `json:"warnings"`
}

type groupJSON struct {
	// Group is 1-based, as in the text.
	Group              int   `json:"group"`
	Moves              int   `json:"moves"`
	Bytes              int64 `json:"bytes"`
	BusiestBrokerBytes int64 `json:"busiest_broker_bytes"`
	// State is done, running, pending or not-run (the operation ended
	// first); MovesStarted counts a running group's moves submitted.
	State        string `json:"state"`
	MovesStarted int    `json:"moves_started"`
}

// writeOperationJSON is writeOperation for scripts.
func writeOperationJSON(w io.Writer, op *executor.Operation) error {
	out := operationDetailJSON{
		operationJSON: operationView(op, op.Progress(nil)), TargetBrokerCount: op.TargetBrokerCount,
		BrokersBefore: orEmpty(op.BrokersBefore), RemoveBrokers: orEmpty(op.RemoveBrokers),
		DeadBrokers: orEmpty(op.DeadBrokers), ReusedBrokers: orEmpty(op.ReusedBrokers),
		PausedAt: optionalTime(op.PausedAt), StepsSubmitted: op.StepsSubmitted, ThrottleBytesPerSec: op.ThrottleRate,
		ThrottleHistory: orEmpty(op.ThrottleHistory), ThrottledBrokers: orEmpty(op.ThrottledBrokers),
		ThrottledReplicas: orEmpty(op.ThrottledReplicas),
	}
	if pl := op.Plan; pl != nil {
		out.Plan = &planJSON{Moves: len(pl.Moves()), TotalBytes: pl.TotalBytes, EstimatedSeconds: pl.EstimatedSeconds,
			ThrottleBytesPerSec: pl.ThrottleBytesPerSec, GroupsInTurn: pl.GroupsInTurn, LeaderReorders: len(pl.Reorders),
			Groups: []groupJSON{}, Brokers: orEmpty(pl.Brokers), Warnings: orEmpty(pl.Warnings)}
		for i, g := range pl.Groups {
			st := statusOf(op, i)
			out.Plan.Groups = append(out.Plan.Groups, groupJSON{Group: i + 1, Moves: len(g.Moves()), Bytes: g.Bytes,
				BusiestBrokerBytes: g.BusiestBrokerBytes, State: st.state, MovesStarted: st.started})
		}
	}
	return writeJSON(w, out)
}
