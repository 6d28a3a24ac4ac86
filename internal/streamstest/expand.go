package streamstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Expansion records when each step of an expansion was committed.
type Expansion struct {
	// SinksCommitted is when the sinks' CreatePartitions returned.
	SinksCommitted time.Time
	// Committed is when the one CreatePartitions request for the sources
	// and the internal topics returned.
	Committed time.Time
}

// Expand grows a Streams app's topics to count partitions in the order a
// live app survives: first the sinks (the app does not consume them, so no
// rebalance follows), then the sources and the internal topics together in
// ONE CreatePartitions request, so that the controller commits them as one
// batch and no reader of the metadata sees one grown without the other.
func Expand(ctx context.Context, cl *kgo.Client, sinks, together []string, count int32) (Expansion, error) {
	var e Expansion
	if err := CreatePartitions(ctx, cl, sinks, count); err != nil {
		return e, fmt.Errorf("expanding the sink topics first: %w", err)
	}
	e.SinksCommitted = time.Now()
	if err := CreatePartitions(ctx, cl, together, count); err != nil {
		return e, fmt.Errorf("expanding the source and internal topics together: %w", err)
	}
	e.Committed = time.Now()
	return e, nil
}

// CreatePartitions grows every topic to count partitions in one
// CreatePartitions request. The request is committed as one batch, yet each
// topic can fail on its own (an invalid count, a quota, authorisation), so
// every topic's result is checked; a topic missing from the response is a
// failure too. Empty topics sends nothing.
func CreatePartitions(ctx context.Context, cl *kgo.Client, topics []string, count int32) error {
	if len(topics) == 0 {
		return nil
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 30000
	for _, t := range topics {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic = t
		rt.Count = count
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("CreatePartitions to %d for %v: %w", count, topics, err)
	}
	var errs []error
	answered := map[string]bool{}
	for _, rt := range resp.Topics {
		answered[rt.Topic] = true
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			msg := ""
			if rt.ErrorMessage != nil {
				msg = ": " + *rt.ErrorMessage
			}
			errs = append(errs, fmt.Errorf("topic %s to %d partitions: %w%s", rt.Topic, count, err, msg))
		}
	}
	for _, t := range topics {
		if !answered[t] {
			errs = append(errs, fmt.Errorf("topic %s: the broker's CreatePartitions response does not mention it", t))
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return errors.Join(errs...)
	}
	return nil
}
