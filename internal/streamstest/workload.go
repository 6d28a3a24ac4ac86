package streamstest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Workload is the app's input: customers first, then a continuous stream
// of orders, every record in its key's home partition. It counts the orders
// acknowledged per product, which is what the app's final counts must be.
type Workload struct {
	cl     *kgo.Client
	topics Topics
	rate   int
	rng    *rand.Rand

	mu        sync.Mutex
	homes     int32
	customers []string
	products  []string
	acked     map[string]int64
	sent      int64
	failed    int64
	firstErr  error

	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup
}

// WorkloadOptions shape a Workload.
type WorkloadOptions struct {
	Bootstrap []string
	Topics    Topics
	// Homes is the topics' partition count at the start.
	Homes int32
	// CustomersPerHome and ProductsPerHome default to 4 and 2.
	CustomersPerHome, ProductsPerHome int
	// Rate is orders per second (default 100).
	Rate int
	// Seed makes the order stream repeatable.
	Seed uint64
}

// NewWorkload connects an idempotent producer (acks=all) and produces the
// customers of homes 0..Homes-1. Orders start with Run.
func NewWorkload(ctx context.Context, o WorkloadOptions) (*Workload, error) {
	if o.CustomersPerHome == 0 {
		o.CustomersPerHome = 4
	}
	if o.ProductsPerHome == 0 {
		o.ProductsPerHome = 2
	}
	if o.Rate == 0 {
		o.Rate = 100
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(o.Bootstrap...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Orders wait up to 100 ms for others of their partition: the
		// brokers' cost is per produce request far more than per record.
		// TestExpandStreamsProtocol's cluster used 39 s of CPU with it,
		// 49.5 s with 5 ms (2026-12-06, alone), at the same 100 orders a
		// second; a partition still gets a batch some ten times a second.
		kgo.ProducerLinger(100*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.MetadataMaxAge(2*time.Second),
	)
	if err != nil {
		return nil, err
	}
	w := &Workload{
		cl: cl, topics: o.Topics, rate: o.Rate,
		rng:   rand.New(rand.NewPCG(o.Seed, 0x5eed)),
		acked: map[string]int64{},
	}
	if err := w.addHomes(ctx, 0, o.Homes, o.CustomersPerHome, o.ProductsPerHome); err != nil {
		cl.Close()
		return nil, err
	}
	return w, nil
}

// addHomes produces the customers of homes [from, to) and waits for their
// acknowledgement before any order can name them, so that the join finds
// them; then it adds them and their products to the pools.
func (w *Workload) addHomes(ctx context.Context, from, to int32, customersPerHome, productsPerHome int) error {
	var customers, products []string
	var recs []*kgo.Record
	for h := from; h < to; h++ {
		for i := range customersPerHome {
			key := fmt.Sprintf("h%d-c%d", h, i)
			customers = append(customers, key)
			recs = append(recs, &kgo.Record{Topic: w.topics.Customers, Partition: h, Key: []byte(key), Value: []byte("customer-" + key)})
		}
		for i := range productsPerHome {
			products = append(products, fmt.Sprintf("h%d-p%d", h, i))
		}
	}
	if err := w.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("producing the customers of homes %d..%d to %s: %w", from, to-1, w.topics.Customers, err)
	}
	w.mu.Lock()
	w.customers = append(w.customers, customers...)
	w.products = append(w.products, products...)
	w.homes = to
	w.mu.Unlock()
	return nil
}

// Run produces orders at the workload's rate until Stop.
func (w *Workload) Run() {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Second / time.Duration(w.rate))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			w.mu.Lock()
			customer := w.customers[n%len(w.customers)]
			product := w.products[w.rng.IntN(len(w.products))]
			amount := 1 + w.rng.IntN(100)
			w.sent++
			w.mu.Unlock()
			home, _ := Home(customer)
			rec := &kgo.Record{
				Topic: w.topics.Orders, Partition: home, Key: []byte(customer),
				Value: fmt.Appendf(nil, "product=%s;amount=%d", product, amount),
			}
			w.wg.Add(1)
			// Not ctx: Stop must not fail a record that may already be
			// written, or the acknowledged counts would be unknowable.
			w.cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
				defer w.wg.Done()
				w.mu.Lock()
				defer w.mu.Unlock()
				if err != nil {
					w.failed++
					if w.firstErr == nil {
						w.firstErr = fmt.Errorf("order for %s (product %s) to %s partition %d: %w", customer, product, w.topics.Orders, home, err)
					}
					return
				}
				w.acked[product]++
			})
		}
	}()
}

// Grow makes new customers and products with homes in [current, homes):
// the keys an expansion to homes partitions exists for. It first waits
// until the producer's metadata shows the new partitions.
func (w *Workload) Grow(ctx context.Context, homes int32, customersPerHome, productsPerHome int) error {
	w.mu.Lock()
	from := w.homes
	w.mu.Unlock()
	for _, topic := range []string{w.topics.Orders, w.topics.Customers} {
		for {
			w.cl.ForceMetadataRefresh()
			// PartitionLeader answers -1 with no error for a partition
			// the producer has not loaded yet.
			if leader, _, err := w.cl.PartitionLeader(topic, homes-1); err == nil && leader >= 0 {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for the producer to see partition %d of %s: %w", homes-1, topic, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return w.addHomes(ctx, from, homes, customersPerHome, productsPerHome)
}

// ProduceOrder produces one order of product by customer and waits for its
// acknowledgement. Unlike Run's orders, product need not be one of the
// workload's: a test can name a product whose home does not exist yet.
func (w *Workload) ProduceOrder(ctx context.Context, customer, product string) error {
	home, err := Home(customer)
	if err != nil {
		return err
	}
	rec := &kgo.Record{
		Topic: w.topics.Orders, Partition: home, Key: []byte(customer),
		Value: fmt.Appendf(nil, "product=%s;amount=1", product),
	}
	if err := w.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("order for %s (product %s) to %s partition %d: %w", customer, product, w.topics.Orders, home, err)
	}
	w.mu.Lock()
	w.sent++
	w.acked[product]++
	w.mu.Unlock()
	return nil
}

// Stop ends the orders and waits until every produced order is acknowledged
// or failed.
func (w *Workload) Stop(ctx context.Context) error {
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
	if err := w.cl.Flush(ctx); err != nil {
		return err
	}
	w.wg.Wait()
	return nil
}

// Close releases the producer.
func (w *Workload) Close() { w.cl.Close() }

// WorkloadStats sum up what a Workload produced.
type WorkloadStats struct {
	Sent, Failed int64
	// Acked is the number of acknowledged orders per product.
	Acked    map[string]int64
	FirstErr error
}

// Stats returns what was produced so far.
func (w *Workload) Stats() WorkloadStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return WorkloadStats{Sent: w.sent, Failed: w.failed, Acked: maps.Clone(w.acked), FirstErr: w.firstErr}
}

// Err returns the first failed produce, or nil.
func (w *Workload) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.firstErr == nil {
		return nil
	}
	return errors.Join(fmt.Errorf("%d of %d orders failed", w.failed, w.sent), w.firstErr)
}
