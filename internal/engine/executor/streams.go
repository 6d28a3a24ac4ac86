package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// StreamsGroupStatus is one look at a Streams app's group.
type StreamsGroupStatus struct {
	State   string
	Members int
	// Stable is true when the state is Stable and the members' assignment
	// covers every partition of every topic the app consumes, each once
	// (for a streams-protocol group, also that every member has reached its
	// target assignment). Why says what is missing otherwise.
	Stable bool
	Why    string
}

func (s StreamsGroupStatus) String() string {
	out := fmt.Sprintf("state %s, %d members", s.State, s.Members)
	if !s.Stable && s.Why != "" {
		out += "; not stable: " + s.Why
	}
	return out
}

// StreamsKafka is what a Streams expansion needs of the cluster.
type StreamsKafka interface {
	// StreamsGroup describes the app's group; partitions tells, for each
	// topic the app consumes, the count its assignment must cover.
	StreamsGroup(ctx context.Context, app string, partitions map[string]int32) (StreamsGroupStatus, error)
}

// Quiescer stops and starts the app (the user's quiesce commands).
type Quiescer interface {
	StopApp(ctx context.Context) error
	StartApp(ctx context.Context) error
}

// ExpansionNotifier tells the user's endpoint that the app is stable on its
// new count.
type ExpansionNotifier interface {
	Notify(ctx context.Context, app string, from, to int32, topics []string) error
}

var _ Grower = (*Executor)(nil)

// StreamsRunApp is what a run needs for one app of a plan that grows
// several: the description of its group, its quiesce commands and its
// endpoint.
type StreamsRunApp struct {
	Kafka    StreamsKafka
	Quiesce  Quiescer
	Notifier ExpansionNotifier
}

// StreamsRun carries out a StreamsExpansion step by step.
type StreamsRun struct {
	Kafka    StreamsKafka
	Quiesce  Quiescer          // needed when the plan stops the app
	Notifier ExpansionNotifier // needed when the plan notifies
	// Apps are the co-expanded apps of a plan that grows several, by id;
	// the request's app uses Kafka, Quiesce and Notifier.
	Apps  map[string]StreamsRunApp
	Clock Clock
	Log   Logger
	// Quiet is how long the group must stay stable before it counts as
	// stable; Poll is how often it is described.
	Quiet, Poll time.Duration
	// AwaitTimeout bounds each wait for the group (0: only ctx bounds it).
	AwaitTimeout time.Duration
	// Grow grows the topics of a step together, under the operation
	// lease: their new partitions are placed on brokers, which no other
	// operation may be moving. An *Executor with a Placer.
	Grow Grower
	// Resource names, in the lease, the declaration that runs the expansion.
	Resource string
}

// Grower grows topics together: *Executor.GrowTogether.
type Grower interface {
	GrowTogether(ctx context.Context, w Work, topics []string, partitions int) error
}

// StreamsStepError says which step failed, and which ones were done: the
// next apply plans from what the cluster shows, so done steps are skipped.
type StreamsStepError struct {
	App   string
	Step  streams.Step
	Index int // 0-based
	Done  []streams.Step
	Err   error
}

func (e *StreamsStepError) Error() string {
	return fmt.Sprintf("Streams app %q: step %d (%s) failed after %d step(s) done: %v", e.App, e.Index+1, e.Step, len(e.Done), e.Err)
}

func (e *StreamsStepError) Unwrap() error { return e.Err }

// forApp is what the run uses for the app a step is about.
func (r StreamsRun) forApp(x streams.Expansion, id string) (string, StreamsRunApp) {
	if id == "" {
		id = x.App
	}
	if a, ok := r.Apps[id]; ok && id != x.App {
		return id, a
	}
	return id, StreamsRunApp{Kafka: r.Kafka, Quiesce: r.Quiesce, Notifier: r.Notifier}
}

// Run carries out x. When it stopped apps, it starts each again even if a
// later step fails, so that a failed expansion never leaves an app down.
func (r StreamsRun) Run(ctx context.Context, x streams.Expansion) (err error) {
	if r.Clock == nil {
		r.Clock = SystemClock{}
	}
	if r.Log == nil {
		r.Log = nopLogger{}
	}
	var stopped []string // in the order stopped
	defer func() {
		if len(stopped) == 0 {
			return
		}
		// ctx may be what ended: start the apps on a context of their own.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		for _, id := range stopped {
			_, a := r.forApp(x, id)
			if serr := a.Quiesce.StartApp(sctx); serr != nil {
				err = errors.Join(err, fmt.Errorf("starting Streams app %s again after the failure: %w", id, serr))
			} else {
				r.Log.Warn(ctx, "started the Streams app again after a failed step", map[string]any{"application_id": id})
			}
		}
	}()
	for i, s := range x.Steps {
		begin := r.Clock.Now()
		id, a := r.forApp(x, s.App)
		group := "the group" // a plan for one app says so, as it always did
		if s.App != "" {
			group = "group " + id
		}
		r.Log.Info(ctx, "Streams expansion step", map[string]any{
			"application_id": id, "step": fmt.Sprintf("%d/%d", i+1, len(x.Steps)), "what": s.String(),
		})
		var serr error
		switch s.Kind {
		case streams.StepGrowSinks, streams.StepGrowTogether:
			serr = r.growTopics(ctx, x, s)
		case streams.StepStopApp:
			if serr = a.Quiesce.StopApp(ctx); serr == nil {
				stopped = append(stopped, id)
			}
		case streams.StepAwaitEmpty:
			_, serr = r.await(ctx, x, id, a.Kafka, group+" to have no members", func(st StreamsGroupStatus) bool { return st.Members == 0 }, 0)
		case streams.StepStartApp:
			if serr = a.Quiesce.StartApp(ctx); serr == nil {
				stopped = slices.DeleteFunc(stopped, func(s string) bool { return s == id })
			}
		case streams.StepAwaitStable:
			var st StreamsGroupStatus
			st, serr = r.await(ctx, x, id, a.Kafka, fmt.Sprintf("%s to be stable on %d partitions", group, s.Partitions), func(st StreamsGroupStatus) bool { return st.Stable }, r.Quiet)
			if serr == nil {
				r.Log.Info(ctx, "Streams app stable", map[string]any{"application_id": id, "status": st.String(), "quiet": r.Quiet.String()})
			}
		case streams.StepNotify:
			from := x.From
			if p, ok := x.For(id); ok && id != x.App {
				from = p.From
			}
			serr = a.Notifier.Notify(ctx, id, from, x.To, grownTopics(x, id))
		default:
			serr = fmt.Errorf("unknown step kind %q; this is a bug in kafkascale", s.Kind)
		}
		if serr != nil {
			return &StreamsStepError{App: id, Step: s, Index: i, Done: x.Steps[:i], Err: serr}
		}
		r.Log.Info(ctx, "Streams expansion step done", map[string]any{
			"application_id": id, "step": fmt.Sprintf("%d/%d", i+1, len(x.Steps)), "elapsed": r.Clock.Now().Sub(begin).Round(time.Millisecond).String(),
		})
	}
	return nil
}

// await polls the group until ok holds without a break for quiet.
func (r StreamsRun) await(ctx context.Context, x streams.Expansion, app string, k StreamsKafka, what string, ok func(StreamsGroupStatus) bool, quiet time.Duration) (StreamsGroupStatus, error) {
	consumed := x.Consumed
	if p, found := x.For(app); found && app != x.App {
		consumed = p.Consumed
	}
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	if r.AwaitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.AwaitTimeout)
		defer cancel()
	}
	var last StreamsGroupStatus
	var lastErr error
	var since time.Time
	for {
		st, err := k.StreamsGroup(ctx, app, consumed)
		switch {
		case err != nil:
			lastErr, since = err, time.Time{}
		case ok(st):
			last, lastErr = st, nil
			if since.IsZero() {
				since = r.Clock.Now()
			}
			if r.Clock.Now().Sub(since) >= quiet {
				return st, nil
			}
		default:
			if !since.IsZero() || last.String() != st.String() {
				r.Log.Info(ctx, "waiting for "+what, map[string]any{"application_id": app, "status": st.String()})
			}
			last, lastErr, since = st, nil, time.Time{}
		}
		if err := r.Clock.Sleep(ctx, poll); err != nil {
			if lastErr != nil {
				return last, fmt.Errorf("gave up waiting for %s (last error: %v): %w", what, lastErr, err)
			}
			return last, fmt.Errorf("gave up waiting for %s (last seen: %s): %w", what, last, err)
		}
	}
}

// grownTopics are the topics of app the plan grows, in the order of the
// steps.
func grownTopics(x streams.Expansion, app string) []string {
	p, found := x.For(app)
	var out []string
	for _, s := range x.Steps {
		for _, t := range s.Topics {
			if !found || slices.Contains(p.Topics, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

func (r StreamsRun) growTopics(ctx context.Context, x streams.Expansion, s streams.Step) error {
	// Nothing persisted resumes a growth, so its id is its own.
	apps := x.App
	if len(x.Apps) > 1 {
		apps = strings.Join(x.AppIDs(), ", ")
	}
	w := Work{ID: fmt.Sprintf("streams-%s-%d-%d", x.App, s.Partitions, r.Clock.Now().UnixNano()), Resource: r.Resource,
		What: fmt.Sprintf("grow the topics of Streams app %s to %d partitions", apps, s.Partitions)}
	return r.Grow.GrowTogether(ctx, w, s.Topics, int(s.Partitions))
}
