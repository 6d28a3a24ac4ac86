package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Replication throttle configs (KIP-73). The rates are per broker; the
// replica lists are per topic and name which replicas the rates apply to.
const (
	ConfigLeaderThrottleRate        = "leader.replication.throttled.rate"
	ConfigFollowerThrottleRate      = "follower.replication.throttled.rate"
	ConfigLeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	ConfigFollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// ThrottledReplicas names, for one topic, the replicas a reassignment
// throttles: Leader holds the replicas that send (the current ones),
// Follower the ones that receive (the new ones). Entries are "partition:broker".
type ThrottledReplicas struct {
	Topic    string
	Leader   []string
	Follower []string
}

// ReplicaEntry formats a throttled-replica entry the way Kafka parses it:
// no spaces, partition then broker.
func ReplicaEntry(partition, broker int32) string {
	return strconv.Itoa(int(partition)) + ":" + strconv.Itoa(int(broker))
}

// TopicThrottledReplicas returns each topic's current throttled-replica
// lists as Kafka stores them ("" when unset, "*" for every replica).
func (c *Client) TopicThrottledReplicas(ctx context.Context, topics []string) (map[string][2]string, error) {
	lists, err := c.throttleLists(ctx, topics)
	out := make(map[string][2]string, len(lists))
	for t, l := range lists {
		out[t] = l.value
	}
	return out, err
}

// throttleLists is a topic's two throttled-replica lists, leader then
// follower: set tells an empty list Kafka stores ("") from none.
type throttleLists struct {
	value [2]string
	set   [2]bool
}

// throttleLists reads the throttled-replica lists of topics from one broker,
// the same one every time while it answers. Each broker applies config
// changes from the metadata log in order, so one broker's reads never go
// back in time; two brokers can disagree for a moment. Reading from any
// broker, a list we subtracted from a moment ago can show its old entries,
// and a SUBTRACT computed from that leaves "" behind where a DELETE was due.
func (c *Client) throttleLists(ctx context.Context, topics []string) (map[string]throttleLists, error) {
	out := make(map[string]throttleLists, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	err := c.withTimeout(ctx, "reading throttled replicas", func(ctx context.Context) error {
		var got map[string]topicConfigs
		// A second try, from another broker, when the one read from has
		// left the cluster (a scale-in that removes it).
		for try := 0; ; try++ {
			b, err := c.throttleReader.get(ctx, c.liveBrokers)
			if err != nil {
				return err
			}
			got, err = c.describeTopicConfigsOnce(ctx, topics, &b)
			if err == nil {
				break
			}
			c.throttleReader.forget(b)
			if try == 1 || ctx.Err() != nil {
				return fmt.Errorf("broker %d: %w", b, err)
			}
		}
		for t, tc := range got {
			var l throttleLists
			for i, k := range []string{ConfigLeaderThrottledReplicas, ConfigFollowerThrottledReplicas} {
				l.value[i], l.set[i] = tc.dynamic[k]
			}
			out[t] = l
		}
		return nil
	})
	return out, err
}

// pinnedBroker is the broker throttleLists reads from: the lowest live id
// that is not known to lag, kept until a read from it fails or it is found
// lagging. One broker, so that a change seen once stays seen.
type pinnedBroker struct {
	mu     sync.Mutex
	id     int32
	ok     bool
	behind map[int32]bool // brokers found lagging the controller's configs
}

func (p *pinnedBroker) get(ctx context.Context, live func(context.Context) ([]int32, error)) (int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ok {
		return p.id, nil
	}
	brokers, err := live(ctx)
	if err != nil {
		return 0, err
	}
	if len(brokers) == 0 {
		return 0, errors.New("the cluster listed no broker")
	}
	p.id, p.ok = brokers[0], true
	for _, b := range brokers {
		if !p.behind[b] {
			p.id = b
			break
		}
	}
	return p.id, nil
}

// current is the pinned broker, if any.
func (p *pinnedBroker) current() (int32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id, p.ok
}

func (p *pinnedBroker) forget(id int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.id == id {
		p.ok = false
	}
}

// lagging drops id as the reader for good (for this client): it showed a
// change the controller made long after it was made.
func (p *pinnedBroker) lagging(id int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.behind == nil {
		p.behind = map[int32]bool{}
	}
	p.behind[id] = true
	if p.id == id {
		p.ok = false
	}
}

// AddThrottledReplicas appends entries to each topic's throttled-replica
// lists, keeping entries other users set. It returns, per topic, the entries
// it added (on an error, those it meant to add): only those may later be
// subtracted. A list that is "*"
// already throttles every replica, and Kafka rejects APPEND onto it, so it
// is left alone.
func (c *Client) AddThrottledReplicas(ctx context.Context, want []ThrottledReplicas) ([]ThrottledReplicas, error) {
	return c.addThrottledReplicas(ctx, want, nil)
}

// addThrottledReplicas is AddThrottledReplicas that, when record is set,
// hands it the entries it is about to add before it adds them, and adds
// nothing if record fails.
func (c *Client) addThrottledReplicas(ctx context.Context, want []ThrottledReplicas, record func([]ThrottledReplicas) error) ([]ThrottledReplicas, error) {
	current, err := c.TopicThrottledReplicas(ctx, topicsOf(want))
	if err != nil {
		return nil, err
	}
	var added []ThrottledReplicas
	alters := make(map[string][]kadm.AlterConfig)
	for _, w := range want {
		cur := current[w.Topic]
		a := ThrottledReplicas{Topic: w.Topic, Leader: missing(cur[0], w.Leader), Follower: missing(cur[1], w.Follower)}
		if len(a.Leader) > 0 {
			v := strings.Join(a.Leader, ",")
			alters[w.Topic] = append(alters[w.Topic], kadm.AlterConfig{Op: kadm.AppendConfig, Name: ConfigLeaderThrottledReplicas, Value: &v})
		}
		if len(a.Follower) > 0 {
			v := strings.Join(a.Follower, ",")
			alters[w.Topic] = append(alters[w.Topic], kadm.AlterConfig{Op: kadm.AppendConfig, Name: ConfigFollowerThrottledReplicas, Value: &v})
		}
		if len(a.Leader)+len(a.Follower) > 0 {
			added = append(added, a)
		}
	}
	if record != nil && len(added) > 0 {
		if err := record(added); err != nil {
			return nil, err
		}
	}
	// Not read back here: the brokers apply it within moments, and waiting
	// for every broker to show it would hold up the move's start. The
	// removal needs no read-back either: the controller computes its
	// SUBTRACT from the lists as it holds them, this APPEND included.
	if err := c.alterTopics(ctx, "throttling moving replicas", alters, nil); err != nil {
		// Some topics may have taken theirs: all are returned, since only
		// what is returned is ever removed, and removing an entry that
		// is not there does nothing.
		return added, err
	}
	return added, nil
}

// RemoveThrottledReplicas subtracts entries this provider added. The
// controller computes a SUBTRACT from the lists as it holds them, so it
// removes exactly these entries whatever a broker shows yet, and an entry
// already gone (a removal retried after its answer was lost, or an APPEND
// that never took) changes nothing: nothing here waits for our entries to
// show first, which for such an entry would be for ever. Kafka leaves ""
// where SUBTRACT removed the last entry; once the removal shows, every
// empty list on the topics touched is deleted.
func (c *Client) RemoveThrottledReplicas(ctx context.Context, ours []ThrottledReplicas) error {
	alters := make(map[string][]kadm.AlterConfig)
	for _, o := range ours {
		for _, spec := range []struct {
			name string
			rm   []string
		}{{ConfigLeaderThrottledReplicas, o.Leader}, {ConfigFollowerThrottledReplicas, o.Follower}} {
			if len(spec.rm) == 0 {
				continue
			}
			v := strings.Join(spec.rm, ",")
			alters[o.Topic] = append(alters[o.Topic], kadm.AlterConfig{Op: kadm.SubtractConfig, Name: spec.name, Value: &v})
		}
	}
	// A topic deleted since it was throttled took its lists with it (the
	// soak, seed 25: a topic destroyed from another working directory
	// while an operation that moved it was stopped; every later apply of
	// the operation failed here).
	var deleted []string
	if err := c.alterTopics(ctx, "removing replica throttles", alters, func(t string) { deleted = append(deleted, t) }); err != nil {
		return err
	}
	ours = slices.DeleteFunc(slices.Clone(ours), func(o ThrottledReplicas) bool { return slices.Contains(deleted, o.Topic) })
	if err := c.awaitSubtracted(ctx, ours); err != nil {
		return err
	}
	return c.deleteEmptyThrottleLists(ctx, topicsOf(ours))
}

// awaitSubtracted waits until throttleLists' broker shows the SUBTRACT of
// ours. Our entries missing is not enough: a list with none of them can be
// one the broker shows from before the SUBTRACT, as when the list was
// absent (a removal retried, or one that overtook its APPEND on this
// broker). A SUBTRACT always leaves the list set, "" at least, so an absent
// list is one the broker has not caught up on, and the "" it will show
// would stay behind undeleted. Absent for longer than a broker takes to
// apply a change means someone deleted it since, which throttles nothing.
func (c *Client) awaitSubtracted(ctx context.Context, ours []ThrottledReplicas) error {
	if len(ours) == 0 {
		return nil
	}
	var absentSince, listedSince time.Time
	var listed string // what the last read still showed of ours
	err := c.await(ctx, "removed throttled replicas to go", func() (bool, error) {
		lists, err := c.throttleLists(ctx, topicsOf(ours))
		if err != nil {
			return false, err
		}
		absent := false
		listed = ""
		for _, o := range ours {
			l := lists[o.Topic]
			for i, entries := range [][]string{o.Leader, o.Follower} {
				switch {
				case len(entries) == 0 || l.value[i] == "*":
				case !l.set[i]:
					absent = true
				default:
					// Which of ours the list still has, as a set: a
					// record that named an entry twice must not wait for
					// a second copy that was never there.
					have := splitList(l.value[i])
					still := slices.DeleteFunc(slices.Clone(entries), func(e string) bool { return !slices.Contains(have, e) })
					if len(still) > 0 && listed == "" {
						listed = fmt.Sprintf("topic %s still lists %v in %s", o.Topic, still, throttleListNames[i])
					}
				}
			}
		}
		if listed != "" {
			// A broker applies a config change within moments of the
			// controller. One that still shows ours long after the
			// SUBTRACT is behind the metadata log: read from another.
			if listedSince.IsZero() {
				listedSince = time.Now()
			} else if time.Since(listedSince) > deletedListGrace {
				if b, ok := c.throttleReader.current(); ok {
					c.throttleReader.lagging(b)
				}
				listedSince = time.Time{}
			}
			return false, nil
		}
		if !absent {
			return true, nil
		}
		if absentSince.IsZero() {
			absentSince = time.Now()
		}
		return time.Since(absentSince) > deletedListGrace, nil
	})
	if err != nil && listed != "" {
		b, _ := c.throttleReader.current()
		return fmt.Errorf("%w: %s on broker %d", err, listed, b)
	}
	return err
}

// throttleListNames name the two lists in the order throttleLists keeps them.
var throttleListNames = [2]string{ConfigLeaderThrottledReplicas, ConfigFollowerThrottledReplicas}

// deletedListGrace is how long a list we subtracted from may stay absent on
// a broker before it counts as deleted since: brokers apply a metadata
// record within milliseconds, seconds when the machine is loaded.
const deletedListGrace = 10 * time.Second

// deleteEmptyThrottleLists deletes the throttled-replica lists of topics
// that are set to "": they throttle nothing, and left behind they show in
// every describe of the topic. The reads come from throttleLists' one
// broker, which already shows the subtraction before them.
func (c *Client) deleteEmptyThrottleLists(ctx context.Context, topics []string) error {
	current, err := c.throttleLists(ctx, topics)
	if err != nil {
		return err
	}
	alters := make(map[string][]kadm.AlterConfig)
	for t, l := range current {
		for i, name := range []string{ConfigLeaderThrottledReplicas, ConfigFollowerThrottledReplicas} {
			if l.set[i] && l.value[i] == "" {
				alters[t] = append(alters[t], kadm.AlterConfig{Op: kadm.DeleteConfig, Name: name})
			}
		}
	}
	if len(alters) == 0 {
		return nil
	}
	if err := c.alterTopics(ctx, "deleting emptied replica throttle lists", alters, func(string) {}); err != nil {
		return err
	}
	return c.await(ctx, "emptied replica throttle lists to go", func() (bool, error) {
		lists, err := c.throttleLists(ctx, slices.Sorted(maps.Keys(alters)))
		if err != nil {
			return false, err
		}
		for _, l := range lists {
			if (l.set[0] && l.value[0] == "") || (l.set[1] && l.value[1] == "") {
				return false, nil
			}
		}
		return true, nil
	})
}

func topicsOf(ts []ThrottledReplicas) []string {
	seen := make(map[string]bool, len(ts))
	var out []string
	for _, t := range ts {
		if !seen[t.Topic] {
			seen[t.Topic] = true
			out = append(out, t.Topic)
		}
	}
	sort.Strings(out)
	return out
}

func splitList(v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// missing returns the entries of want that the list cur does not hold; on
// "*" nothing is missing.
func missing(cur string, want []string) []string {
	if cur == "*" {
		return nil
	}
	have := make(map[string]bool)
	for _, e := range splitList(cur) {
		have[e] = true
	}
	var out []string
	for _, e := range want {
		if !have[e] {
			have[e] = true
			out = append(out, e)
		}
	}
	return out
}
