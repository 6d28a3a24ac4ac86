package executor

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
)

// BrokerMetrics is one broker's load as the metrics source sees it. A field
// is NaN when the source has no value for it.
type BrokerMetrics struct {
	Broker int32
	// IOPressure is the disk I/O pressure query's value; higher is worse.
	IOPressure float64
	// HandlerIdle is the request handlers' idle ratio, 0 to 1; lower is worse.
	HandlerIdle float64
}

// MetricsSource samples broker metrics (Prometheus, in practice).
type MetricsSource interface {
	Sample(ctx context.Context, brokers []int32) ([]BrokerMetrics, error)
}

// AIMD is the throttle controller: additive increase while every throttled
// broker is healthy, multiplicative decrease as soon as one is under
// pressure, and no change when a broker's metrics are missing.
type AIMD struct {
	Source MetricsSource
	// Increase is added to the rate while healthy (bytes/s).
	Increase int64
	// DecreaseFactor multiplies the rate under pressure (0 < f < 1).
	DecreaseFactor float64
	// MaxIOPressure and MinHandlerIdle are the health thresholds.
	MaxIOPressure  float64
	MinHandlerIdle float64
}

// Advise implements RateAdvisor.
func (a AIMD) Advise(ctx context.Context, brokers []int32, current int64) (int64, bool, string) {
	samples, err := a.Source.Sample(ctx, brokers)
	if err != nil {
		return current, false, "metrics unavailable: " + err.Error()
	}
	byBroker := make(map[int32]BrokerMetrics, len(samples))
	for _, s := range samples {
		byBroker[s.Broker] = s
	}
	var missing, pressured []string
	for _, b := range brokers {
		s, ok := byBroker[b]
		if !ok || math.IsNaN(s.IOPressure) || math.IsNaN(s.HandlerIdle) {
			missing = append(missing, fmt.Sprint(b))
			continue
		}
		if s.IOPressure > a.MaxIOPressure {
			pressured = append(pressured, fmt.Sprintf("broker %d I/O pressure %.3g > %.3g", b, s.IOPressure, a.MaxIOPressure))
		}
		if s.HandlerIdle < a.MinHandlerIdle {
			pressured = append(pressured, fmt.Sprintf("broker %d request handler idle %.2f < %.2f", b, s.HandlerIdle, a.MinHandlerIdle))
		}
	}
	sort.Strings(pressured)
	// Pressure anywhere wins over missing data elsewhere: slowing down is
	// always safe.
	if len(pressured) > 0 {
		next := int64(float64(current) * a.DecreaseFactor)
		return next, true, "pressure: " + strings.Join(pressured, "; ")
	}
	if len(missing) > 0 {
		return current, false, "no metrics for broker(s) " + strings.Join(missing, ", ")
	}
	return current + a.Increase, true, "all throttled brokers healthy"
}

// adjustThrottle asks the Advisor and applies its rate, bounded, when it
// differs by more than 10 %: smaller changes are noise and each one is a
// config write on every throttled broker.
func (e *Executor) adjustThrottle(ctx context.Context, op *Operation) error {
	next, ok, reason := e.d.Advisor.Advise(ctx, op.ThrottledBrokers, op.ThrottleRate)
	if !ok {
		e.d.Log.Info(ctx, "throttle held", map[string]any{"operation": op.ID, "throttle": op.ThrottleRate, "reason": reason})
		return nil
	}
	next = clampRate(next, e.s.MinThrottle, e.s.MaxThrottle)
	// Reaching a bound always counts: otherwise a rate one small step from
	// max_throttle (or min) would never get there.
	atBound := next != op.ThrottleRate && (next == e.s.MinThrottle || next == e.s.MaxThrottle)
	if !atBound && !significantChange(op.ThrottleRate, next) {
		return nil
	}
	if err := e.d.Kafka.SetThrottle(ctx, op.ThrottledBrokers, next); err != nil {
		return fmt.Errorf("changing the replication throttle from %d to %d B/s: %w", op.ThrottleRate, next, err)
	}
	e.d.Log.Info(ctx, "throttle changed", map[string]any{"operation": op.ID, "from": op.ThrottleRate, "to": next, "reason": reason})
	op.recordThrottle(e.d.Clock.Now().UTC(), next, reason)
	return e.save(ctx, op)
}

func clampRate(r, lowest, highest int64) int64 {
	if lowest > 0 && r < lowest {
		r = lowest
	}
	if highest > 0 && r > highest {
		r = highest
	}
	return r
}

func significantChange(from, to int64) bool {
	if from <= 0 {
		return to > 0
	}
	d := to - from
	if d < 0 {
		d = -d
	}
	return d*10 > from
}
