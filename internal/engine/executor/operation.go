package executor

import (
	"slices"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// Kind is what an operation does.
type Kind string

// The kinds of operation.
const (
	KindScaleOut          Kind = "scale-out"
	KindScaleIn           Kind = "scale-in"
	KindReplicationFactor Kind = "replication-factor"
	// KindReplace adds brokers, moves the leaving brokers' replicas onto
	// them, and removes the leaving ones: the broker count is unchanged.
	KindReplace Kind = "replace"
)

// Phase is where an operation stands. Phases run in this order; a scale-out
// skips remove-brokers and a scale-in skips add-brokers.
type Phase string

// The phases.
const (
	// PhaseAddBrokers: the platform was asked for more brokers; waiting for
	// them to register, unfenced.
	PhaseAddBrokers Phase = "add-brokers"
	// PhaseReassign: Plan is fixed; Group is the group in progress.
	PhaseReassign Phase = "reassign"
	// PhaseFinish: every group is done; reorders, verification, preferred
	// leader election and throttle removal remain.
	PhaseFinish Phase = "finish"
	// PhaseRemoveBrokers: the leaving brokers hold nothing; the platform
	// stops them and the controller forgets them.
	PhaseRemoveBrokers Phase = "remove-brokers"
	// PhaseCompleted: nothing left to do.
	PhaseCompleted Phase = "completed"
	// PhaseAbandoned: the plan no longer matches the cluster (someone else
	// moved its partitions); the next run plans anew from what is there.
	PhaseAbandoned Phase = "abandoned"
	// PhaseCancelled: the configuration asked for something else while
	// the operation was unfinished. Its reassignments in flight were
	// cancelled and its throttles removed; the next operation plans from
	// what it left.
	PhaseCancelled Phase = "cancelled"
)

// Operation is the persisted record of one operation: the plan and exactly
// how far it got. It is the only state the executor keeps, so a new apply
// that loads it continues from the same point.
type Operation struct {
	// Version is the record's shape (OperationVersion once read or saved;
	// DecodeOperation upgrades older ones).
	Version int `json:"version"`

	Key  string `json:"key"`
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// TargetBrokerCount is the broker count the operation leads to.
	TargetBrokerCount int     `json:"target_broker_count,omitempty"`
	RemoveBrokers     []int32 `json:"remove_brokers,omitempty"`
	// DeadBrokers are the leaving brokers that were fenced or offline when
	// the operation started: they get no throttle (a broker that is down
	// cannot take its own config) and are not waited for.
	DeadBrokers []int32 `json:"dead_brokers,omitempty"`
	// ReusedBrokers are dead brokers the platform brought back under the
	// same id (empty disks) during a replacement: Kafka re-replicates onto
	// them by itself, so the operation only waits for their ISR to fill.
	ReusedBrokers []int32 `json:"reused_brokers,omitempty"`
	// ScalingMethod names how brokers are added and removed ("http",
	// "command", ...): Timings measured with another method do not apply.
	ScalingMethod string `json:"scaling_method,omitempty"`
	// Timings are the last measured broker add and remove times on this
	// cluster: carried over from the previous operation under the same
	// key and updated when this one adds or removes brokers, so the next
	// plan estimates with them.
	Timings engine.Timings `json:"timings,omitzero"`
	// BrokersBefore are the brokers registered when the operation started;
	// after a scale-out, the others are the new ones.
	BrokersBefore []int32 `json:"brokers_before,omitempty"`
	Phase         Phase   `json:"phase"`
	// Options are the planner's limits, kept so a plan made after the
	// brokers arrive uses the limits the user asked for.
	Options engine.Options `json:"options"`

	Plan *engine.Plan `json:"plan,omitempty"`
	// Group is the lowest group with a move not done (or the next to
	// start): every move of the groups before it is done.
	Group int `json:"group"`
	// Started are the moves of Group and later groups submitted so far, as
	// indexes into Plan.Moves(), recorded before they are submitted, and
	// Finished those of them seen done. Where a started move not finished
	// stands (in flight, or lost before Kafka took it) is read from Kafka.
	// Under the continuous schedule moves of several groups run at once.
	Started  []int `json:"started,omitempty"`
	Finished []int `json:"finished,omitempty"`
	// StepsSubmitted counts the submissions holding a move of Group: at
	// least one once any of its moves is submitted.
	StepsSubmitted int `json:"steps_submitted"`

	// ThrottleRate is the replication throttle in force, bytes/s per broker.
	ThrottleRate int64 `json:"throttle_rate"`
	// ThrottleHistory lists the changes of ThrottleRate the dynamic
	// throttle made, oldest first, the last MaxThrottleHistory kept: what
	// `kafkascale operation show` prints, so that an operator can see why
	// an operation ran slower or faster than planned.
	ThrottleHistory []ThrottleChange `json:"throttle_history,omitempty"`
	// Phases are when the operation entered each phase, and Samples how
	// far its copy had come over time (samples.go): what `kafkascale
	// report` draws. Both are bounded; records from before them have
	// neither, and read as an operation with no timeline.
	Phases  []PhaseStart     `json:"phases,omitempty"`
	Samples []ProgressSample `json:"samples,omitempty"`
	// ThrottledBrokers carry the rate; ThrottledReplicas are the topic
	// entries this operation added for the group in progress.
	ThrottledBrokers  []int32             `json:"throttled_brokers,omitempty"`
	ThrottledReplicas []ThrottledReplicas `json:"throttled_replicas,omitempty"`
	// CordonedBrokers are the leaving brokers this operation cordoned
	// (KIP-1066), recorded before the cordon is set: a cancelled or
	// abandoned operation removes the cordon from them, and so does a
	// drain that reaches remove-brokers, before they are stopped.
	CordonedBrokers []int32 `json:"cordoned_brokers,omitempty"`

	// MovesDone and BytesDone count the moves done, and their bytes: every
	// move of the groups before Group and the Finished ones.
	MovesDone int   `json:"moves_done"`
	BytesDone int64 `json:"bytes_done"`

	StartedAt   time.Time `json:"started_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	CompletedAt time.Time `json:"completed_at,omitempty"`
	// PausedAt is when the last run stopped at its time budget
	// (Settings.MaxRunDuration) between two groups, with nothing of the
	// operation in flight; zero while a run is on it or after any other
	// end.
	PausedAt time.Time `json:"paused_at,omitzero"`
	// LastError is the error that stopped the last run, if any: a resumed
	// run shows the user why the previous one stopped.
	LastError string `json:"last_error,omitempty"`
}

// ClusterKey is the key a cluster's scaling operations are stored under:
// the one kafkascale_cluster, data.kafkascale_rebalance_plan and
// `kafkascale report` read.
func ClusterKey(clusterID string) string { return "cluster/" + clusterID }

// Done reports whether the operation has nothing left to do: it completed,
// or it was abandoned or cancelled and the next run starts afresh.
func (op *Operation) Done() bool {
	return op.Phase == PhaseCompleted || op.Phase == PhaseAbandoned || op.Phase == PhaseCancelled
}

// Paused reports whether the last run stopped at its time budget, leaving
// the rest for the next one.
func (op *Operation) Paused() bool { return !op.Done() && !op.PausedAt.IsZero() }

// Remaining is what is left of an operation's plan.
type Remaining struct {
	Moves    int
	Bytes    int64
	Duration time.Duration
	// ETA is Duration broken into its parts.
	ETA engine.ETA
}

// Remaining is the one account of what an operation has left, at a
// throttle of rate bytes/s per broker: the plan, the progress log and the
// next plan's cost all read it. Before its plan exists (brokers are still
// being added) only the broker changes, the finish and a scale-out's
// groups unknown yet are left out: its Duration counts the brokers.
func (op *Operation) Remaining(rate int64) Remaining { return op.remaining(rate, 0) }

// remaining is Remaining with copied bytes of the moves in progress
// (Copying) already on their destinations.
func (op *Operation) remaining(rate, copied int64) Remaining {
	in := op.etaInputs(rate)
	in.CopiedInFirstGroup = copied
	if op.Plan == nil {
		eta := engine.EstimateGroups(nil, in)
		return Remaining{Duration: eta.Total(), ETA: eta}
	}
	// Replicas still to copy, counted as the plan counts ReplicaMoves:
	// MovesDone counts partition moves, and a move may copy more than
	// one replica.
	copies := 0
	states, inFlight := op.moveStates(copied)
	for k, m := range op.Plan.Moves() {
		if states[k] != engine.MoveDone {
			copies += len(m.Adding)
		}
	}
	in.CopiedInFirstGroup = 0 // in inFlight, per move
	eta := op.Plan.RemainingETA(states, inFlight, in)
	return Remaining{
		Moves:    copies,
		Bytes:    max(op.Plan.TotalBytes-op.BytesDone, 0),
		Duration: eta.Total(),
		ETA:      eta,
	}
}

// etaInputs are the ETA's inputs for what op has left: the brokers it has
// still to add and remove, with the timings it carries.
func (op *Operation) etaInputs(rate int64) engine.ETAInputs {
	in := engine.ETAInputs{Throttle: rate, Measured: op.Timings, Method: op.ScalingMethod}
	if op.Done() {
		in.SkipFinish = true
		return in
	}
	if op.Phase == PhaseAddBrokers {
		in.AddBrokers = op.brokersToAdd()
	}
	if op.Phase != PhaseCompleted {
		in.RemoveBrokers = len(op.RemoveBrokers)
	}
	in.SkipFinish = op.Phase == PhaseRemoveBrokers
	return in
}

// brokersToAdd is how many brokers a scale-out or replacement asks for.
func (op *Operation) brokersToAdd() int {
	if op.Kind == KindReplace {
		return len(op.RemoveBrokers)
	}
	return max(op.TargetBrokerCount-len(op.BrokersBefore), 0)
}

// ThrottleChange is one change of an operation's throttle.
type ThrottleChange struct {
	At     time.Time `json:"at"`
	From   int64     `json:"from"`
	To     int64     `json:"to"`
	Reason string    `json:"reason"`
}

// MaxThrottleHistory bounds ThrottleHistory: the dynamic throttle may
// change the rate every adjust_interval of an operation that runs for
// days, and the record is rewritten at every step.
const MaxThrottleHistory = 100

// recordThrottle sets op's rate to to, and keeps the change.
func (op *Operation) recordThrottle(at time.Time, to int64, reason string) {
	op.ThrottleHistory = append(op.ThrottleHistory, ThrottleChange{At: at, From: op.ThrottleRate, To: to, Reason: reason})
	if n := len(op.ThrottleHistory); n > MaxThrottleHistory {
		op.ThrottleHistory = slices.Delete(op.ThrottleHistory, 0, n-MaxThrottleHistory)
	}
	op.ThrottleRate = to
}

// openMoves are the moves that may be in flight: those started and not
// finished, in plan order.
func (op *Operation) openMoves() []engine.Move {
	if op.Plan == nil || op.Phase != PhaseReassign || op.Group >= len(op.Plan.Groups) {
		return nil
	}
	moves := op.Plan.Moves()
	var out []engine.Move
	for _, k := range op.running() {
		out = append(out, moves[k])
	}
	return out
}

// running are the indexes of openMoves.
func (op *Operation) running() []int {
	if op.Plan == nil || op.Group >= len(op.Plan.Groups) {
		return nil
	}
	var out []int
	for _, k := range op.Started {
		if !slices.Contains(op.Finished, k) {
			out = append(out, k)
		}
	}
	return out
}

// StartedIn counts the moves of group g recorded as started.
func (op *Operation) StartedIn(g int) int {
	if op.Plan == nil || g < 0 || g >= len(op.Plan.Groups) {
		return 0
	}
	first := 0
	for _, gr := range op.Plan.Groups[:g] {
		first += len(gr.Moves())
	}
	end := first + len(op.Plan.Groups[g].Moves())
	n := 0
	for _, k := range op.Started {
		if k >= first && k < end {
			n++
		}
	}
	return n
}

// moveStates is where the record says each move of the plan stands, for
// the estimate: the groups before Group and the finished moves done, the
// running ones in flight, the rest pending. copied, the bytes the running
// moves already hold, is shared among them by their bytes.
func (op *Operation) moveStates(copied int64) ([]engine.MoveState, []int64) {
	moves := op.Plan.Moves()
	states := make([]engine.MoveState, len(moves))
	k := 0
	for _, g := range op.Plan.Groups[:min(max(op.Group, 0), len(op.Plan.Groups))] {
		for range g.Moves() {
			states[k] = engine.MoveDone
			k++
		}
	}
	for _, j := range op.Finished {
		if j >= 0 && j < len(moves) {
			states[j] = engine.MoveDone
		}
	}
	running := slices.DeleteFunc(op.running(), func(j int) bool { return j < 0 || j >= len(moves) || states[j] == engine.MoveDone })
	var total int64
	for _, j := range running {
		total += moves[j].Bytes
	}
	done := make([]int64, len(moves))
	for _, j := range running {
		states[j] = engine.MoveInFlight
		if total > 0 && copied > 0 {
			done[j] = int64(float64(min(copied, total)) * float64(moves[j].Bytes) / float64(total))
		}
	}
	return states, done
}
