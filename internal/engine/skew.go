package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// HeavyFactor is how many times the mean bytes a broker may hold after a
// change before the plan warns about it.
const HeavyFactor = 1.5

// HeavyBroker is a broker that will hold clearly more than its share once a
// plan is done.
type HeavyBroker struct {
	ID    int32
	Rack  string
	Bytes int64
	// Mean is the mean bytes of the brokers that stay.
	Mean int64
}

func (h HeavyBroker) String() string {
	return fmt.Sprintf("broker %d (rack %q) will hold %d bytes, %.1f× the mean of %d", h.ID, h.Rack, h.Bytes, h.Ratio(), h.Mean)
}

// Ratio is the broker's bytes over the mean.
func (h HeavyBroker) Ratio() float64 { return float64(h.Bytes) / float64(h.Mean) }

// Shares lists what each broker of staying will hold once p is done,
// heaviest first, each with the mean of them all (none when they hold
// nothing).
func Shares(p *Plan, staying []Broker) []HeavyBroker {
	if p == nil || len(staying) == 0 {
		return nil
	}
	bytes := map[int32]int64{}
	for _, t := range p.Target {
		for _, r := range t.Replicas {
			bytes[r] += t.SizeBytes
		}
	}
	var total int64
	for _, b := range staying {
		total += bytes[b.ID]
	}
	mean := total / int64(len(staying))
	if mean == 0 {
		return nil
	}
	out := make([]HeavyBroker, len(staying))
	for i, b := range staying {
		out[i] = HeavyBroker{ID: b.ID, Rack: b.Rack, Bytes: bytes[b.ID], Mean: mean}
	}
	slices.SortFunc(out, func(a, b HeavyBroker) int { return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.ID, b.ID)) })
	return out
}

// HeavyBrokers lists the brokers of staying that will hold more than
// factor times their mean bytes once p is done, heaviest first. With
// failure domains left uneven (racks 3/1/1 under RF 3), a broker alone in
// its rack holds a replica of every partition: that is what it catches.
func HeavyBrokers(p *Plan, staying []Broker, factor float64) []HeavyBroker {
	var out []HeavyBroker
	for _, h := range Shares(p, staying) {
		if h.Ratio() > factor {
			out = append(out, h)
		}
	}
	return out
}

// RackCounts says how many brokers each rack holds, "a: 3, b: 1, c: 1".
func RackCounts(bs []Broker) string {
	count := map[string]int{}
	var racks []string
	for _, b := range bs {
		if count[b.Rack] == 0 {
			racks = append(racks, b.Rack)
		}
		count[b.Rack]++
	}
	slices.Sort(racks)
	parts := make([]string, len(racks))
	for i, r := range racks {
		parts[i] = fmt.Sprintf("%s: %d", r, count[r])
	}
	return strings.Join(parts, ", ")
}

// HeavyLeaderFactor is how many times the mean preferred leadership a plan
// may leave a broker with before the plan warns about it.
const HeavyLeaderFactor = 1.25

// HeavyLeaders names the brokers that p leaves the preferred leader of
// more than HeavyLeaderFactor times the mean over the brokers that stay and
// are not demoted, as "broker 1 (rack a) leads 15, 1.34× the mean of
// 11.2". The racks can force it: a broker alone in its rack may be the
// only replica that can lead some partitions.
func HeavyLeaders(p *Plan, demoted []int32) []string {
	if p == nil {
		return nil
	}
	var total, brokers int
	for _, b := range p.Brokers {
		if !b.Removed && b.Alive && !slices.Contains(demoted, b.Broker) {
			total += b.After.Leaders
			brokers++
		}
	}
	if brokers == 0 || total == 0 {
		return nil
	}
	mean := float64(total) / float64(brokers)
	var out []string
	for _, b := range p.Brokers {
		if !b.Removed && b.Alive && float64(b.After.Leaders) > HeavyLeaderFactor*mean {
			out = append(out, fmt.Sprintf("broker %d (rack %q) leads %d, %.2f× the mean of %.1f", b.Broker, b.Rack, b.After.Leaders,
				float64(b.After.Leaders)/mean, mean))
		}
	}
	return out
}
