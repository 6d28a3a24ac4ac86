package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The ETA model: how long an operation takes from its plan, as the executor
// runs it. It is the one place where that arithmetic lives; the plan, the
// executor's progress and remaining view, and the data sources read it.
//
// What an apply spends its time on, besides the copy itself, is mostly
// waiting: for the platform to start or stop brokers, for the next poll of
// a running group, and for Kafka to put the new replicas in the ISR once
// they have caught up. The constants below are measured on a two-core
// machine with kafkascale-local clusters (Apache Kafka 4.4, make bench-eta).

// DefaultPollInterval is how often the executor checks a running group, the
// brokers it waits for and the verification at the end. The executor uses
// it when its settings name none, so the estimate counts the same waits.
const DefaultPollInterval = time.Second

// DefaultBrokerAddTime is the time per added broker before this cluster
// and scaling method have a measurement: from the request to the platform
// until the broker is registered, unfenced and in the metadata. One local
// broker (the JVM kafkascale-local starts) took 1.9s here, two 4.3s; a
// cloud platform that creates a machine takes longer, and its own
// measurement replaces this after the first scale-out.
const DefaultBrokerAddTime = 3 * time.Second

// DefaultBrokerRemoveTime is the time per removed broker before a
// measurement: the platform stopping it (a controlled shutdown, after the
// drain it leads nothing), the executor seeing it stopped and its
// unregistration. 1.05s for one local broker here; the default leaves room
// for a scaling API polled every two seconds.
const DefaultBrokerRemoveTime = 2 * time.Second

// GroupSettleTime is what a group costs beyond its copy and the poll that
// sees it done: throttling its replicas, submitting its steps, and Kafka
// joining the new replicas to the ISR and completing each reassignment once
// the data is there. Groups took 0.1s to 1.0s longer than their copy here,
// the poll included (make bench-eta, four scenarios). They took 4s to 5s
// longer while the executor read the ISR through a metadata cache that
// could be 5s old.
const GroupSettleTime = 250 * time.Millisecond

// MoveSettleTime is what each move costs its receiving broker beyond its
// bytes: creating the replica's log and starting its fetch, the replica
// joining the ISR and the controller completing the reassignment. Invisible
// on a few large moves, it is the whole time of thousands of small ones:
// 3,001 empty moves onto one new broker took about 56 s here beyond the
// broker's start and the finish, 18.7 ms each
// (TestAccClusterResource_largestLocalCluster, make bench-largest).
const MoveSettleTime = 18 * time.Millisecond

// TieredStartTime is what a new replica of a partition with segments in
// remote storage only (Partition.RemoteBytes; with KIP-1023, tiered
// segments its leader still keeps count too) spends before it copies: it
// builds the state it starts from (leader epochs, producer state) out of
// remote storage, once its broker's remote log metadata manager has read
// the partition's segment metadata, and until then retries at
// replica.fetch.backoff.ms. Measured with TestAccClusterResource_tieredScaleOut
// on a quiet machine (2026-12-06): without KIP-1023, a 3 -> 5 scale-out's
// reassignment took 5.1 s where its copy of 22.5 MiB at 50 MiB/s and the
// groups' settling come to 2 s; with KIP-1023, a 5 -> 7 scale-out's, of a
// 1.3 MiB copy, 4.0-4.4 s where they come to 1.5 s. Both ran as two
// waves of moves, so about 1.5 s each.
const TieredStartTime = 1500 * time.Millisecond

// FinishTime is the end of every operation beyond its poll waits: the
// reorders, verifying every partition against the target, the preferred
// leader election and removing the throttles. About 1s here, with brokers
// added or not.
const FinishTime = time.Second

// GrowthWindow is how far back the recent write rate of the moving
// partitions is measured for the catch-up: a minute smooths producers'
// bursts and still follows a change of load. A topic filled within that
// minute counts as written at that rate.
const GrowthWindow = time.Minute

// Timings are measured durations of the phases that depend on the
// platform, kept with the operation record so the next plan of the same
// cluster estimates with them. Method is the scaling method they were
// measured with; another method's figures are not used.
type Timings struct {
	Method string `json:"method,omitempty"`
	// BrokerAddSeconds is the last add-brokers phase's time per broker.
	BrokerAddSeconds float64 `json:"broker_add_seconds,omitempty"`
	// BrokerRemoveSeconds is the last remove-brokers phase's time per
	// broker.
	BrokerRemoveSeconds float64 `json:"broker_remove_seconds,omitempty"`
}

// ETAInputs are what the estimate needs besides the plan. Everything
// measured comes in here as data: the engine reads no clock.
type ETAInputs struct {
	// Throttle is the replication throttle, bytes/s per broker.
	Throttle int64
	// PollInterval is the executor's (zero: DefaultPollInterval).
	PollInterval time.Duration
	// AddBrokers and RemoveBrokers are how many brokers the operation
	// still has to add and remove.
	AddBrokers, RemoveBrokers int
	// Measured are the timings of the last operation on the cluster;
	// Method is the scaling method this one uses. A zero figure, or one
	// measured with another method, gives the default.
	Measured Timings
	Method   string
	// DeclaredAddTime is the time per added broker that the scaling
	// method says its platform takes, used until one is measured (zero:
	// it says nothing, and DefaultBrokerAddTime is counted).
	DeclaredAddTime time.Duration
	// SkipFinish is set once the finish phase is done.
	SkipFinish bool
	// CopiedInFirstGroup is what the first group (the one in progress)
	// has copied already: only the rest of its copy is left.
	CopiedInFirstGroup int64
}

// ETA is an estimate broken into its parts.
type ETA struct {
	AddBrokers int
	// Adding is the time to add AddBrokers; AddMeasured says whether it
	// comes from a measurement rather than DefaultBrokerAddTime.
	Adding      time.Duration
	AddMeasured bool
	// AddDeclared says that Adding comes from the scaling method's
	// declared time (ETAInputs.DeclaredAddTime), not yet measured.
	AddDeclared bool
	Groups      int
	Bytes       int64
	Throttle    int64
	// Copying is each group's busiest broker's bytes at the throttle,
	// summed over the groups.
	Copying time.Duration
	// CatchingUp is what the copy takes longer because producers keep
	// writing to the moving partitions: a new replica joins the ISR only
	// once it has copied those bytes too. GrowthBytesPerSec is that write
	// rate, summed over the moving partitions, and Saturated the brokers
	// where it reaches the throttle, so that the copy may never catch up.
	CatchingUp        time.Duration
	GrowthBytesPerSec float64
	Saturated         []int32
	// Settling is what the groups cost beyond the copy: a poll interval
	// to see each done, and GroupSettleTime.
	Settling time.Duration
	// Finishing is verification, reorders and leader election.
	Finishing      time.Duration
	RemoveBrokers  int
	Removing       time.Duration
	RemoveMeasured bool
}

// Total is the sum of the parts.
func (e ETA) Total() time.Duration {
	return e.Adding + e.Copying + e.CatchingUp + e.Settling + e.Finishing + e.Removing
}

// String is the breakdown the plan shows, e.g. "~1m27s: 30s adding 3
// brokers, 49s copying 250 MiB in 7 groups at 8 MiB/s per broker, 14s
// settling the moves, 2s verifying and electing leaders".
func (e ETA) String() string {
	var parts []string
	if e.AddBrokers > 0 {
		s := fmt.Sprintf("%s adding %d broker(s)", round(e.Adding), e.AddBrokers)
		switch {
		case e.AddMeasured:
		case e.AddDeclared:
			s += " (the time the scaling method declares, not yet measured)"
		default:
			// The first scale-out of a cluster has nothing to go by: a
			// platform that creates machines takes minutes where a
			// local broker takes seconds.
			s += fmt.Sprintf(" (unknown until this scaling method has added a broker: counted at the default of %s each)", round(DefaultBrokerAddTime))
		}
		parts = append(parts, s)
	}
	if e.Groups > 0 {
		parts = append(parts, fmt.Sprintf("%s copying %s in %d group(s) at %s/s per broker", round(e.Copying), HumanBytes(e.Bytes), e.Groups, HumanBytes(e.Throttle)))
		if e.CatchingUp > 0 || len(e.Saturated) > 0 {
			s := fmt.Sprintf("%s catching up on %s/s written to the moving partitions", round(e.CatchingUp), HumanBytes(int64(e.GrowthBytesPerSec)))
			if len(e.Saturated) > 0 {
				s += fmt.Sprintf(" (on brokers %v the writes reach %d%% of the throttle, so the copy may not catch up: raise the throttle)", e.Saturated, saturation)
			}
			parts = append(parts, s)
		}
		parts = append(parts, fmt.Sprintf("%s starting and settling the groups", round(e.Settling)))
	}
	if e.Finishing > 0 {
		parts = append(parts, fmt.Sprintf("%s verifying and electing leaders", round(e.Finishing)))
	}
	if e.RemoveBrokers > 0 {
		s := fmt.Sprintf("%s removing %d broker(s)", round(e.Removing), e.RemoveBrokers)
		if !e.RemoveMeasured {
			s += " (default, not yet measured)"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "~0s: nothing to do"
	}
	return fmt.Sprintf("~%s: %s", round(e.Total()), strings.Join(parts, ", "))
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// EstimateGroups estimates an operation that runs groups (what is left of
// a plan) with in.
func EstimateGroups(groups []Group, in ETAInputs) ETA {
	poll := pollInterval(in)
	e := brokerETA(in)
	e.Groups = len(groups)
	for i, g := range groups {
		e.Bytes += g.Bytes
		// What is left of the group in progress, by its bytes; its moves
		// settle as its bytes copy.
		left := 1.0
		if i == 0 && g.Bytes > 0 {
			left = 1 - min(float64(max(in.CopiedInFirstGroup, 0))/float64(g.Bytes), 1)
		}
		if in.Throttle > 0 {
			copying := left * float64(g.BusiestBrokerBytes) / float64(in.Throttle)
			e.Copying += seconds(copying)
			if catchUp := catchUpSeconds(g, left, float64(in.Throttle), &e); catchUp > copying {
				e.CatchingUp += seconds(catchUp - copying)
			}
		}
		// The group is seen done at the first poll after it is: half
		// an interval on average.
		e.Settling += GroupSettleTime + poll/2
		if startsTieredReplica(g) && (i > 0 || in.CopiedInFirstGroup == 0) {
			e.Settling += TieredStartTime
		}
		e.Settling += seconds(left * float64(busiestReceiverMoves(g)) * MoveSettleTime.Seconds())
	}
	finishETA(&e, in, len(groups) > 0)
	return e
}

// pollInterval is the executor's poll interval in in.
func pollInterval(in ETAInputs) time.Duration {
	if in.PollInterval <= 0 {
		return DefaultPollInterval
	}
	return in.PollInterval
}

// brokerETA is the part of an estimate that does not depend on how the
// moves are scheduled: the throttle, and adding and removing brokers at
// the measured time when the method matches and at the default otherwise.
func brokerETA(in ETAInputs) ETA {
	e := ETA{AddBrokers: in.AddBrokers, RemoveBrokers: in.RemoveBrokers, Throttle: in.Throttle}
	measured := in.Method != "" && in.Measured.Method == in.Method
	perAdd, perRemove := DefaultBrokerAddTime, DefaultBrokerRemoveTime
	switch {
	case in.AddBrokers == 0:
	case measured && in.Measured.BrokerAddSeconds > 0:
		perAdd, e.AddMeasured = seconds(in.Measured.BrokerAddSeconds), true
	case in.DeclaredAddTime > 0:
		perAdd, e.AddDeclared = in.DeclaredAddTime, true
	}
	if measured && in.Measured.BrokerRemoveSeconds > 0 && in.RemoveBrokers > 0 {
		perRemove, e.RemoveMeasured = seconds(in.Measured.BrokerRemoveSeconds), true
	}
	e.Adding = time.Duration(in.AddBrokers) * perAdd
	e.Removing = time.Duration(in.RemoveBrokers) * perRemove
	return e
}

// finishETA completes e: the saturated brokers in order, and the finish
// phase unless it is done or there is nothing to finish (moves tells
// whether any move is left).
func finishETA(e *ETA, in ETAInputs, moves bool) {
	slices.Sort(e.Saturated)
	if !in.SkipFinish && (moves || in.AddBrokers > 0 || in.RemoveBrokers > 0) {
		e.Finishing = FinishTime
	}
}

// startsTieredReplica says whether g adds a replica to a partition with
// segments in remote storage: its moves all start together, so the group
// waits TieredStartTime once.
func startsTieredReplica(g Group) bool {
	for _, s := range g.Steps {
		for _, m := range s.Moves {
			if m.RemoteBytes > 0 {
				return true
			}
		}
	}
	return false
}

// busiestReceiverMoves is the most moves of g that add a replica to one
// broker.
// The receivers are sorted and the longest run counted: a map per group
// cost more than the rest of the estimate at thousands of groups.
func busiestReceiverMoves(g Group) int {
	var buf [64]int32
	ids := buf[:0]
	for _, s := range g.Steps {
		for _, m := range s.Moves {
			ids = append(ids, m.Adding...)
		}
	}
	slices.Sort(ids)
	most, run := 0, 0
	for i, b := range ids {
		if i > 0 && b == ids[i-1] {
			run++
		} else {
			run = 1
		}
		most = max(most, run)
	}
	return most
}

// ETA estimates the whole plan with in.
func (p *Plan) ETA(in ETAInputs) ETA { return p.RemainingETA(nil, nil, in) }

// RemainingETA estimates what is left of the plan, states saying where
// each move stands (nil: nothing started) and copied what the moves in
// flight already hold (nil: nothing), under the schedule the plan runs:
// EstimateContinuous simulates the continuous one. A plan whose groups run
// in turn, or one of more than groupsCheckMoves moves (whose simulation
// would cost the plan seconds), gets the groups' estimate from the first
// group with a move not done, what is copied taken off it: for the
// continuous schedule an upper bound within a few percent on most plans
// (TestPropertyEstimateContinuous).
func (p *Plan) RemainingETA(states []MoveState, copied []int64, in ETAInputs) ETA {
	if p.simulated(in.Throttle) {
		return EstimateContinuous(p, states, copied, p.MaxMovesPerBroker, in)
	}
	from, k := 0, 0
	for ; from < len(p.Groups); from++ {
		size := len(p.Groups[from].Moves())
		if states != nil && !slices.ContainsFunc(states[k:k+size], func(s MoveState) bool { return s != MoveDone }) {
			k += size
			continue
		}
		break
	}
	groups := p.Groups[from:]
	if states != nil {
		// Moves of later groups may be done already: the groups are
		// estimated without them.
		groups = make([]Group, 0, len(p.Groups)-from)
		for g := from; g < len(p.Groups); g++ {
			var left []Move
			for _, m := range p.Groups[g].Moves() {
				if states[k] != MoveDone {
					left = append(left, m)
				}
				k++
			}
			switch {
			case len(left) == len(p.Groups[g].Moves()):
				groups = append(groups, p.Groups[g])
			case len(left) > 0:
				groups = append(groups, groupOf(left))
			}
		}
	}
	var done int64
	for _, c := range copied {
		done += c
	}
	in.CopiedInFirstGroup += done
	return EstimateGroups(groups, in)
}

// groupOf is a group of the moves ms, with its bytes and its busiest
// broker's bytes in or out (the old list's first replica sends).
func groupOf(ms []Move) Group {
	g := Group{Steps: []Step{{Moves: ms}}}
	in, out := map[int32]int64{}, map[int32]int64{}
	for _, m := range ms {
		g.Bytes += m.Bytes
		for _, b := range m.Adding {
			in[b] += m.Bytes / int64(len(m.Adding))
			g.BusiestBrokerBytes = max(g.BusiestBrokerBytes, in[b])
		}
		if len(m.OldReplicas) > 0 {
			out[m.OldReplicas[0]] += m.Bytes
			g.BusiestBrokerBytes = max(g.BusiestBrokerBytes, out[m.OldReplicas[0]])
		}
	}
	return g
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// saturation is the share of the throttle, in percent, from which the
// writes to a broker's moving partitions count as reaching it: the copy
// then gains on them too slowly to estimate, and is estimated as if it
// had the rest of the throttle to itself.
const saturation = 90

// catchUpSeconds is how long g's busiest broker takes to copy its share
// of what is left (left) of g at throttle bytes/s while producers keep
// writing to the moving partitions: a broker that copies B bytes while
// its partitions grow at r bytes/s is done at B/(throttle-r). A new
// replica receives each write once; the sender, the old list's first
// replica, sends it to each new replica. It adds the group's write rate
// to e, and any broker the writes saturate to e.Saturated. Zero when no
// move of g has a growth rate.
func catchUpSeconds(g Group, left, throttle float64, e *ETA) float64 {
	type load struct{ bytes, rate float64 }
	var loads map[int32]*load
	add := func(b int32, bytes, rate float64) {
		l := loads[b]
		if l == nil {
			l = &load{}
			loads[b] = l
		}
		l.bytes += bytes
		l.rate += rate
	}
	for _, s := range g.Steps {
		for _, m := range s.Moves {
			if m.GrowthBytesPerSec <= 0 || len(m.Adding) == 0 {
				continue
			}
			if loads == nil {
				loads = make(map[int32]*load)
			}
			e.GrowthBytesPerSec += m.GrowthBytesPerSec
			n := float64(len(m.Adding))
			for _, b := range m.Adding {
				add(b, float64(m.Bytes)/n, m.GrowthBytesPerSec)
			}
			if len(m.OldReplicas) > 0 {
				add(m.OldReplicas[0], float64(m.Bytes), m.GrowthBytesPerSec*n)
			}
		}
	}
	var longest float64
	for _, b := range slices.Sorted(maps.Keys(loads)) {
		l := loads[b]
		free := throttle - l.rate
		if l.rate*100 >= throttle*saturation {
			if !slices.Contains(e.Saturated, b) {
				e.Saturated = append(e.Saturated, b)
			}
			free = throttle * (100 - saturation) / 100
		}
		longest = max(longest, left*l.bytes/free)
	}
	return longest
}

// HumanBytes writes n in binary units: "250 MiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v == float64(int64(v)) || v >= 100 {
		return fmt.Sprintf("%.0f %ciB", v, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
}

// Seconds is Total in whole seconds, rounded.
func (e ETA) Seconds() int64 { return int64(e.Total().Round(time.Second) / time.Second) }

// With returns t updated with a measurement under method: a positive add
// or remove time per broker replaces the one kept. Figures measured with
// another method are dropped.
func (t Timings) With(method string, addPerBroker, removePerBroker time.Duration) Timings {
	if t.Method != method {
		t = Timings{Method: method}
	}
	if addPerBroker > 0 {
		t.BrokerAddSeconds = addPerBroker.Seconds()
	}
	if removePerBroker > 0 {
		t.BrokerRemoveSeconds = removePerBroker.Seconds()
	}
	return t
}
