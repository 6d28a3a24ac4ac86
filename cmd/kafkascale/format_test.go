package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

const mib = 1 << 20

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// plan3 is a plan of three groups: 2 moves and 40 MiB each, every move
// adding one replica on broker 4 or 5.
func plan3() *engine.Plan {
	pl := &engine.Plan{ThrottleBytesPerSec: 10 * mib}
	for g := 0; g < 3; g++ {
		var ms []engine.Move
		for i := 0; i < 2; i++ {
			p := int32(g*2 + i)
			ms = append(ms, engine.Move{Topic: "t", Partition: p, OldReplicas: []int32{1, 2}, NewReplicas: []int32{1, int32(4 + i)},
				Adding: []int32{int32(4 + i)}, Removing: []int32{2}, Bytes: 20 * mib})
		}
		pl.Groups = append(pl.Groups, engine.Group{Steps: []engine.Step{{Moves: ms}}, Bytes: 40 * mib, BusiestBrokerBytes: 20 * mib})
		pl.ReplicaMoves += 2
		pl.TotalBytes += 40 * mib
	}
	pl.EstimatedSeconds = pl.ETA(engine.ETAInputs{Throttle: pl.ThrottleBytesPerSec}).Seconds()
	pl.Brokers = []engine.BrokerProjection{
		{Broker: 1, Rack: "a", Alive: true, Before: engine.Load{Replicas: 6, Leaders: 6, Bytes: 120 * mib}, After: engine.Load{Replicas: 6, Leaders: 6, Bytes: 120 * mib}},
		{Broker: 4, Rack: "b", Alive: true, Added: true, After: engine.Load{Replicas: 3, Bytes: 60 * mib}},
	}
	return pl
}

func running() *executor.Operation {
	return &executor.Operation{Key: "cluster/abc", ID: "op-running", Kind: executor.KindScaleOut, TargetBrokerCount: 5,
		BrokersBefore: []int32{1, 2, 3}, Phase: executor.PhaseReassign, Plan: plan3(), Group: 1, Started: []int{2, 3}, StepsSubmitted: 1,
		ThrottleRate: 10 * mib, ThrottledBrokers: []int32{1, 2, 4, 5},
		ThrottledReplicas: []executor.ThrottledReplicas{{Topic: "t", Leader: []string{"2:1", "3:1"}, Follower: []string{"2:4", "3:5"}}},
		MovesDone:         2, BytesDone: 40 * mib, StartedAt: t0, UpdatedAt: t0.Add(5 * time.Second)}
}

func completed() *executor.Operation {
	return &executor.Operation{Key: "topic/abc/orders", ID: "op-done", Kind: executor.KindReplicationFactor, Phase: executor.PhaseCompleted,
		Plan: plan3(), Group: 3, MovesDone: 6, BytesDone: 120 * mib, ThrottleRate: 10 * mib,
		StartedAt: t0.Add(-time.Hour), UpdatedAt: t0.Add(-50 * time.Minute), CompletedAt: t0.Add(-50 * time.Minute)}
}

func abandoned() *executor.Operation {
	return &executor.Operation{Key: "cluster/old", ID: "op-abandoned", Kind: executor.KindScaleIn, Phase: executor.PhaseAbandoned,
		Plan: plan3(), Group: 1, MovesDone: 2, BytesDone: 40 * mib, ThrottleRate: 10 * mib, ThrottledBrokers: []int32{7},
		StartedAt: t0.Add(-2 * time.Hour), UpdatedAt: t0.Add(-110 * time.Minute),
		LastError: "operation op-abandoned stopped: 1 partition(s) changed outside kafkascale"}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 40 * mib: "40.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := formatBytes(in); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

// The list puts the unfinished operation first whatever the start times,
// gives each field, and ends with the throttle the abandoned one left.
func TestWriteOperations(t *testing.T) {
	var b bytes.Buffer
	writeOperations(&b, []*executor.Operation{completed(), abandoned(), running()})
	out := b.String()
	lines := strings.Split(out, "\n")
	for i, want := range []*regexp.Regexp{
		regexp.MustCompile(`^ID\s+KEY\s+KIND\s+PHASE\s+GROUP\s+MOVES\s+BYTES\s+STARTED\s+UPDATED\s+LAST ERROR$`),
		regexp.MustCompile(`^op-running\s+cluster/abc\s+scale-out\s+reassign\s+2/3\s+2/6\s+40\.0 MiB/120\.0 MiB\s+2026-12-01 10:00:00Z\s+2026-12-01 10:00:05Z\s+-$`),
		regexp.MustCompile(`^op-done\s+topic/abc/orders\s+replication-factor\s+completed\s+3/3\s+6/6\s+120\.0 MiB/120\.0 MiB\s+2026-12-01 09:00:00Z\s+2026-12-01 09:10:00Z\s+-$`),
		regexp.MustCompile(`^op-abandoned\s+cluster/old\s+scale-in\s+abandoned\s+2/3\s+2/6\s+40\.0 MiB/120\.0 MiB\s+2026-12-01 08:00:00Z\s+2026-12-01 08:10:00Z\s+operation op-abandoned stopped: 1 partition\(s\) changed outside kafkascale$`),
		regexp.MustCompile(`^$`),
		regexp.MustCompile(`^orphaned throttles`),
		regexp.MustCompile(`^  operation op-abandoned \(cluster/old\): a rate of 10485760 B/s on brokers \[7\]$`),
	} {
		if i >= len(lines) || !want.MatchString(lines[i]) {
			t.Fatalf("line %d does not match %s:\n%s", i+1, want, out)
		}
	}
}

func TestWriteOperationsNone(t *testing.T) {
	var b bytes.Buffer
	writeOperations(&b, nil)
	if got := b.String(); got != "no operation is recorded on this cluster\n" {
		t.Fatalf("got %q", got)
	}
}

func TestWriteOperation(t *testing.T) {
	var b bytes.Buffer
	op := running()
	op.ThrottleHistory = []executor.ThrottleChange{{At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), From: 8 * mib, To: 10 * mib, Reason: "all throttled brokers healthy"}}
	writeOperation(&b, op)
	out := b.String()
	for _, want := range []string{
		"operation:           op-running",
		"throttle changed:    2026-12-01T10:00:00Z: 8.0 MiB/s -> 10.0 MiB/s (all throttled brokers healthy)",
		"phase:               reassign (group 2/3, 1 step(s) of it submitted)",
		"target brokers:      5",
		"brokers before:      1 2 3",
		"progress:            moves 2/6, bytes 40.0 MiB/120.0 MiB (moves done)",
		// Two groups left, each 20 MiB on the busiest broker at 10 MiB/s,
		// with their settling and the finish: the engine's ETA.
		fmt.Sprintf("remaining:           ~%s at the throttle in force", running().Remaining(10*mib).Duration.Round(time.Second)),
		"throttle:            10.0 MiB/s per broker",
		"throttled brokers:   1 2 4 5",
		"throttled replicas:  topic t: 2 leader, 2 follower entries",
		"last error:          -",
		fmt.Sprintf("plan: 6 move(s) in 3 group(s), 120.0 MiB to copy, estimated %s at 10.0 MiB/s, 0 leader reorder(s)",
			time.Duration(plan3().EstimatedSeconds)*time.Second),
		"  1      2      40.0 MiB  20.0 MiB        done",
		"  2      2      40.0 MiB  20.0 MiB        running (2 of 2 moves started)",
		"  3      2      40.0 MiB  20.0 MiB        pending",
		"  4       b     0 -> 3    0 -> 0             0 B -> 60.0 MiB         added",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	b.Reset()
	inTurn := running()
	inTurn.Plan.GroupsInTurn = true
	writeOperation(&b, inTurn)
	if !strings.Contains(b.String(), " at 10.0 MiB/s, its groups run in turn, 0 leader reorder(s)") {
		t.Errorf("a plan run in turn does not say so:\n%s", b.String())
	}
	b.Reset()
	writeOperation(&b, abandoned())
	for _, want := range []string{"  2      2      40.0 MiB  20.0 MiB        not run (abandoned)", "  operation op-abandoned stopped: 1 partition(s) changed outside kafkascale\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}

// A record from before the version field, whose group in progress was
// submitted whole with no move recorded, reads as that group running.
func TestWriteOperationOfAnUnversionedRecord(t *testing.T) {
	old := running()
	old.Started = nil
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	op, err := executor.DecodeOperation(b)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	writeOperation(&out, op)
	if want := "  2      2      40.0 MiB  20.0 MiB        running (2 of 2 moves started)"; !strings.Contains(out.String(), want) {
		t.Errorf("missing %q in:\n%s", want, out.String())
	}
}

func TestFindOperationByIDOrKey(t *testing.T) {
	_, err := findOperation([]*executor.Operation{completed(), running()}, "op-nope")
	if err == nil || err.Error() != `no operation has the id or key "op-nope"; the recorded ones are: op-running (cluster/abc), op-done (topic/abc/orders)` {
		t.Fatalf("got %v", err)
	}
	// A key names the operation as its id does.
	if op, err := findOperation([]*executor.Operation{completed(), running()}, "topic/abc/orders"); err != nil || op.ID != "op-done" {
		t.Fatalf("by key: got %v, %v", op, err)
	}
	if op, err := findOperation([]*executor.Operation{completed(), running()}, "op-done"); err != nil || op.ID != "op-done" {
		t.Fatalf("got %v, %v", op, err)
	}
}

// The progress of a running group counts what its destinations hold, each
// replica up to its planned size, and takes that share off the ETA.
func TestDescribeProgress(t *testing.T) {
	op := running()
	sizes := map[executor.Replica]int64{
		{Topic: "t", Partition: 2, Broker: 4}: 10 * mib,
		{Topic: "t", Partition: 3, Broker: 5}: 30 * mib, // grew past its planned 20 MiB: counts 20
		{Topic: "t", Partition: 3, Broker: 1}: 99 * mib, // not a destination
	}
	p := op.Progress(sizes)
	if p.BytesDone != 70*mib {
		t.Fatalf("bytes done %d, want 70 MiB", p.BytesDone)
	}
	// 30 of group 2's 40 MiB copied: the ETA is the engine's for what is
	// left, that copy taken off, so shorter than with nothing copied.
	if left := op.Remaining(op.ThrottleRate).Duration; p.ETA <= 0 || p.ETA >= left {
		t.Fatalf("ETA %s with 30 MiB copied, want under the %s left with none", p.ETA, left)
	}
	want := fmt.Sprintf("70.0 MiB/120.0 MiB  5.0 MiB/s  group 2/3  ETA %s", p.ETA.Round(time.Second))
	if got := describe(p, 5*mib); got != want {
		t.Fatalf("describe = %q, want %q", got, want)
	}
	if got := describe(executor.Progress{Phase: executor.PhaseAddBrokers}, -1); got != "0 B/0 B  - B/s  group -  ETA -" {
		t.Fatalf("describe before the plan = %q", got)
	}
	// Once the copy's pace is known, its re-estimate is the ETA shown, in
	// the text and in JSON.
	p.Projected, p.ProjectedAt = 95*time.Second, time.Unix(1000, 0)
	if got := describe(p, 5*mib); !strings.HasSuffix(got, "ETA 1m35s (at the pace seen)") {
		t.Fatalf("describe with a re-estimate = %q", got)
	}
	if v := operationView(op, p); v.ProjectedETASeconds == nil || *v.ProjectedETASeconds != 95 || v.ProjectedAt == nil || !v.ProjectedAt.Equal(p.ProjectedAt) {
		t.Fatalf("JSON view of the re-estimate: %v at %v, want 95 s at %s", v.ProjectedETASeconds, v.ProjectedAt, p.ProjectedAt)
	}
}

func TestRateMeter(t *testing.T) {
	var m rateMeter
	if r := m.add(t0, 100*mib); r != -1 {
		t.Fatalf("first reading gave %v", r)
	}
	if r := m.add(t0.Add(2*time.Second), 104*mib); r != 2*mib {
		t.Fatalf("rate %v, want 2 MiB/s", r)
	}
	for i := 3; i <= 20; i++ {
		m.add(t0.Add(time.Duration(i)*time.Second), 104*mib+int64(i-2)*mib)
	}
	// Only the last 10s count: 1 MiB/s, not the 4 MiB of the first 2s.
	if r := m.add(t0.Add(21*time.Second), 123*mib); r < 0.99*mib || r > 1.01*mib {
		t.Fatalf("rate %v, want about 1 MiB/s", r)
	}
}

func TestPick(t *testing.T) {
	other := running()
	other.Key, other.ID = "topic/abc/orders", "op-rf"
	if _, _, err := pick([]*executor.Operation{running(), other}, ""); err == nil ||
		err.Error() != "2 operations are unfinished; choose one by its key or id: cluster/abc (op-running, scale-out), topic/abc/orders (op-rf, scale-out)" {
		t.Fatalf("got %v", err)
	}
	if op, open, err := pick([]*executor.Operation{running(), other}, "topic/abc/orders"); err != nil || !open || op.ID != "op-rf" {
		t.Fatalf("got %v %v %v", op, open, err)
	}
	// An id names the operation as its key does.
	if op, open, err := pick([]*executor.Operation{running(), other}, "op-rf"); err != nil || !open || op.ID != "op-rf" {
		t.Fatalf("by id: got %v %v %v", op, open, err)
	}
	if _, _, err := pick([]*executor.Operation{running()}, "nope"); err == nil || err.Error() != `no operation has the id or key "nope"; the recorded ones are: op-running (cluster/abc)` {
		t.Fatalf("got %v", err)
	}
	// With nothing unfinished, the most recently updated one.
	if op, open, err := pick([]*executor.Operation{abandoned(), completed()}, ""); err != nil || open || op.ID != "op-done" {
		t.Fatalf("got %v %v %v", op, open, err)
	}
}

// fakeSource replays operation records, one per read, and reports the
// destination of partition 2 growing by 5 MiB a read.
type fakeSource struct {
	records [][]*executor.Operation
	reads   int
	err     error
}

func (f *fakeSource) Operations(context.Context) ([]*executor.Operation, error) {
	if f.err != nil {
		return nil, f.err
	}
	r := f.records[min(f.reads, len(f.records)-1)]
	f.reads++
	return r, nil
}

func (f *fakeSource) ReplicaSizes(_ context.Context, rs []executor.Replica) (map[executor.Replica]int64, error) {
	out := map[executor.Replica]int64{}
	for _, r := range rs {
		if r.Partition == 2 {
			out[r] = int64(f.reads) * 5 * mib
		}
	}
	return out, nil
}

func watchWith(t *testing.T, src source, key string) (string, error) {
	t.Helper()
	var b bytes.Buffer
	w := &watcher{src: src, view: &textView{out: &b, bar: true, interval: time.Millisecond}, interval: time.Millisecond, now: time.Now}
	err := w.run(context.Background(), key)
	return b.String(), err
}

func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		return 1
	}
}

// A watch follows the running operation to its end: the bytes rise, each
// stage gets its own line, and a completed operation exits 0.
func TestWatchFollowsToCompletion(t *testing.T) {
	done := completed()
	done.Key, done.ID = "cluster/abc", "op-running"
	src := &fakeSource{records: [][]*executor.Operation{{running()}, {running()}, {running()}, {done}}}
	out, err := watchWith(t, src, "")
	if code := exitCode(err); code != 0 {
		t.Fatalf("exit %d (%v):\n%s", code, err, out)
	}
	for _, want := range []string{"following operation op-running (cluster/abc, scale-out)", "reassign: group 2/3", "completed\n", "operation op-running completed at 2026-12-01 09:10:00Z"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	var seen []string
	for _, m := range regexp.MustCompile(`(\d+\.\d) MiB/120\.0 MiB`).FindAllStringSubmatch(out, -1) {
		if len(seen) == 0 || seen[len(seen)-1] != m[1] {
			seen = append(seen, m[1])
		}
	}
	if strings.Join(seen, " ") != "45.0 50.0 55.0 120.0" {
		t.Fatalf("bytes shown %v, want 45.0 50.0 55.0 120.0:\n%q", seen, out)
	}
}

func TestWatchOutcomes(t *testing.T) {
	gone := abandoned()
	gone.Key, gone.ID = "cluster/abc", "op-running"
	out, err := watchWith(t, &fakeSource{records: [][]*executor.Operation{{running()}, {gone}}}, "")
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "operation op-running (cluster/abc) was abandoned: operation op-abandoned stopped") {
		t.Fatalf("abandoned: %v\n%s", err, out)
	}
	// Nothing unfinished: the last one's outcome.
	out, err = watchWith(t, &fakeSource{records: [][]*executor.Operation{{completed(), abandoned()}}}, "")
	if exitCode(err) != 0 || !strings.Contains(out, "no unfinished operation; the last one, op-done (topic/abc/orders, replication-factor), is completed") {
		t.Fatalf("last completed: %v\n%s", err, out)
	}
	out, err = watchWith(t, &fakeSource{records: [][]*executor.Operation{{completed(), abandoned()}}}, "cluster/old")
	if exitCode(err) != 1 || !strings.Contains(out, "the last one, op-abandoned (cluster/old, scale-in), is abandoned") {
		t.Fatalf("last abandoned: %v\n%s", err, out)
	}
	_, err = watchWith(t, &fakeSource{err: kafka.ErrNoOperationsTopic}, "")
	if err == nil || err.Error() != "no kafkascale operation has run on this cluster: topic __kafkascale_operations does not exist" {
		t.Fatalf("missing topic: %v", err)
	}
}

// The connection settings come from the flags, then from the provider's
// environment variables.
func TestConnectionSettings(t *testing.T) {
	env := map[string]string{kafka.EnvBootstrapServers: "a:9092, b:9092", kafka.EnvSASLUsername: "u", kafka.EnvSASLPassword: "p"}
	c := connFlags{requestTimeout: time.Second}
	kc, err := c.config(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(kc.BootstrapServers, ",") != "a:9092,b:9092" || kc.TLS != nil || kc.SASL == nil ||
		!reflect.DeepEqual(*kc.SASL, kafka.SASLConfig{Mechanism: kafka.MechanismScramSHA512, Username: "u", Password: "p"}) {
		t.Fatalf("from the environment: %+v %+v", kc, kc.SASL)
	}
	c = connFlags{bootstrap: "c:9093", caCert: "ca.pem", saslMechanism: kafka.MechanismPlain, saslUsername: "x"}
	kc, err = c.config(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(kc.BootstrapServers, ",") != "c:9093" || kc.TLS == nil || kc.TLS.CACert != "ca.pem" ||
		!reflect.DeepEqual(*kc.SASL, kafka.SASLConfig{Mechanism: kafka.MechanismPlain, Username: "x", Password: "p"}) {
		t.Fatalf("from the flags: %+v %+v", kc, kc.SASL)
	}
	if _, err := (&connFlags{}).config(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "--bootstrap-servers or set KAFKA_BOOTSTRAP_SERVERS") {
		t.Fatalf("no servers: %v", err)
	}
	if _, err := (&connFlags{bootstrap: "a:1", saslMechanism: kafka.MechanismPlain}).config(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "--sasl-username or set KAFKA_SASL_USERNAME") {
		t.Fatalf("no username: %v", err)
	}
	// OAUTHBEARER from the environment alone, as the provider's empty
	// sasl {} block takes it; and the client credentials from the flags.
	oauthEnv := map[string]string{kafka.EnvBootstrapServers: "a:9092", kafka.EnvSASLMechanism: kafka.MechanismOAuthBearer, kafka.EnvSASLToken: "tok"}
	kc, err = (&connFlags{}).config(func(k string) string { return oauthEnv[k] })
	if err != nil || kc.SASL == nil || !reflect.DeepEqual(*kc.SASL, kafka.SASLConfig{Mechanism: kafka.MechanismOAuthBearer, OAuth: kafka.OAuthConfig{Token: "tok"}}) {
		t.Fatalf("OAUTHBEARER from the environment: %v %+v", err, kc.SASL)
	}
	c = connFlags{bootstrap: "a:1", saslMechanism: kafka.MechanismOAuthBearer, oauthScopes: []string{"kafka"},
		oauth: kafka.OAuthConfig{TokenEndpointURL: "https://idp.example/token", ClientID: "id"}}
	kc, err = c.config(func(k string) string { return map[string]string{kafka.EnvSASLClientSecret: "secret"}[k] })
	want := kafka.OAuthConfig{TokenEndpointURL: "https://idp.example/token", ClientID: "id", ClientSecret: "secret", Scopes: []string{"kafka"}}
	if err != nil || kc.SASL == nil || !reflect.DeepEqual(kc.SASL.OAuth, want) {
		t.Fatalf("client credentials from the flags and the secret from the environment: %v %+v", err, kc.SASL)
	}
	if _, err := (&connFlags{bootstrap: "a:1", saslMechanism: kafka.MechanismOAuthBearer}).config(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "OAUTHBEARER needs a token source") {
		t.Fatalf("no token source: %v", err)
	}
}

// An operation an apply paused at max_apply_duration says so in the list
// and in its record: it waits for the next apply, not for Kafka.
func TestWriteOperationPaused(t *testing.T) {
	op := running()
	op.StepsSubmitted, op.ThrottledBrokers, op.ThrottledReplicas = 0, nil, nil
	op.PausedAt = t0.Add(10 * time.Second)
	var list, one bytes.Buffer
	writeOperations(&list, []*executor.Operation{op})
	writeOperation(&one, op)
	if !strings.Contains(list.String(), "reassign (paused)") {
		t.Errorf("the list does not mark the operation paused:\n%s", list.String())
	}
	want := "reassign (group 2/3, 0 step(s) of it submitted), paused at max_apply_duration since " + formatTime(op.PausedAt)
	if !strings.Contains(one.String(), want) {
		t.Errorf("the record does not say it is paused; want %q in:\n%s", want, one.String())
	}
}
