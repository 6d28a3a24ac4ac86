package kafka

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestHook reports every request written to a broker by its API name
// (Config.OnRequest).
type requestHook func(api string)

var _ kgo.HookBrokerWrite = requestHook(nil)

// OnBrokerWrite implements franz-go's hook; a failed write is not reported.
func (h requestHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		h(kmsg.NameForKey(key))
	}
}

// responseAs is the typed response of a request sent through a raw
// broker or sharded call. franz-go answers a request with its own
// response type, so a mismatch is a bug, reported rather than panicking.
func responseAs[T kmsg.Response](kr kmsg.Response) (T, error) {
	r, ok := kr.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("kafka: a %T came back where a %T was expected", kr, zero)
	}
	return r, nil
}
