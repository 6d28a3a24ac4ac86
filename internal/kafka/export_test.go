package kafka

import "context"

// AwaitFencedOrListening exposes the wait a snapshot makes on a broker that
// refuses connections, for the tests of package kafka_test (which start
// real clusters through kafkatest, itself an importer of this package).
func AwaitFencedOrListening(ctx context.Context, c *Client, id int32, addr string) error {
	return c.awaitFencedOrListening(ctx, &BrokerDownError{ID: id, Addr: addr})
}
