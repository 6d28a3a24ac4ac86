package kafkatest

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

// opTimeout bounds one scaling operation; starting or stopping a broker
// takes seconds, so this only catches a hung JVM.
const opTimeout = 10 * time.Minute

// ScalingAPI serves the HTTP scaling API (docs/scaling-api.openapi.yaml) for
// one Cluster, with real brokers behind it:
//
//	GET /v1/clusters/{id}
//	PUT /v1/clusters/{id}/broker-count
//	GET /v1/operations/{op}
//
// A scale-out starts brokers with new ids, racks round-robin over the
// cluster's racks, and succeeds once they are all unfenced. The same count
// with remove_broker_ids is a replacement: it starts one broker with a new
// id in the rack of each named broker; a second request, once the caller has
// drained the named brokers, is a scale-in that removes them. A scale-in stops
// the leaving brokers in order and then unregisters them; it never
// unregisters a running broker. It moves no partitions: draining the leaving
// brokers first is the caller's job, as with any real platform.
//
// With ReuseIDs, a replacement of brokers that are down restarts each under
// its id with an empty disk instead, as a Kubernetes StatefulSet does.
//
// One operation runs at a time. Repeating the request of the current
// operation, while it runs or after it succeeded, returns that operation; a
// different request while one runs is a 409.
type ScalingAPI struct {
	// ReuseIDs is set before the first request.
	ReuseIDs bool

	c         *Cluster
	clusterID string
	token     string
	mux       *http.ServeMux

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	ops    map[string]*operation
	latest *operation
	hold   <-chan struct{}
}

// HoldScaleOuts makes the scale-outs asked for from now on start their
// brokers only once release is closed: a platform slower than the apply
// that asked, whose broker registers during the next apply.
func (s *ScalingAPI) HoldScaleOuts(release <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = release
}

type operation struct {
	op     platform.Operation // guarded by ScalingAPI.mu
	req    platform.SetBrokerCountRequest
	target int
	add    []string // racks of the brokers to add
	remove []int32  // brokers to remove
	reuse  []int32  // dead brokers to start again under their ids
}

// NewScalingAPI returns the API for c under the platform cluster id
// clusterID. With a non-empty token every request must carry
// "Authorization: Bearer <token>". Call Close to cancel running operations
// before stopping the cluster.
func NewScalingAPI(c *Cluster, clusterID, token string) *ScalingAPI {
	s := &ScalingAPI{c: c, clusterID: clusterID, token: token, mux: http.NewServeMux(), ops: map[string]*operation{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mux.HandleFunc("GET /v1/clusters/{id}", s.getCluster)
	s.mux.HandleFunc("PUT /v1/clusters/{id}/broker-count", s.putBrokerCount)
	s.mux.HandleFunc("GET /v1/operations/{op}", s.getOperation)
	// Without these the mux would answer a wrong method with a plain-text
	// 405; the contract says every error body is JSON.
	s.mux.HandleFunc("/v1/clusters/{id}", methodNotAllowed("GET"))
	s.mux.HandleFunc("/v1/clusters/{id}/broker-count", methodNotAllowed("PUT"))
	s.mux.HandleFunc("/v1/operations/{op}", methodNotAllowed("GET"))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	return s
}

// Close cancels running operations and waits for them to end.
func (s *ScalingAPI) Close() {
	s.cancel()
	s.wg.Wait()
}

// ServeHTTP authenticates the request and routes it.
func (s *ScalingAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kafkascale"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token in the Authorization header")
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *ScalingAPI) knownCluster(w http.ResponseWriter, r *http.Request) bool {
	if id := r.PathValue("id"); id != s.clusterID {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no cluster %q here; this server manages cluster %q", id, s.clusterID))
		return false
	}
	return true
}

func (s *ScalingAPI) getCluster(w http.ResponseWriter, r *http.Request) {
	if !s.knownCluster(w, r) {
		return
	}
	out := platform.Cluster{ID: s.clusterID, Brokers: []platform.Broker{}}
	for _, b := range s.c.Brokers() {
		out.Brokers = append(out.Brokers, platform.Broker{ID: b.ID, Rack: b.Rack, State: b.State})
	}
	out.BrokerCount = len(out.Brokers)
	s.mu.Lock()
	if s.latest != nil {
		op := s.latest.op
		out.Operation = &op
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *ScalingAPI) getOperation(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	op, ok := s.ops[r.PathValue("op")]
	var out platform.Operation
	if ok {
		out = op.op
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no operation %q", r.PathValue("op")))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *ScalingAPI) putBrokerCount(w http.ResponseWriter, r *http.Request) {
	if !s.knownCluster(w, r) {
		return
	}
	var req platform.SetBrokerCountRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "the body is not a broker-count request: "+err.Error())
		return
	}
	if req.BrokerCount < 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("broker_count must be at least 1, got %d", req.BrokerCount))
		return
	}
	req.RemoveBrokerIDs = slices.Clone(req.RemoveBrokerIDs)
	slices.Sort(req.RemoveBrokerIDs)
	if len(slices.Compact(slices.Clone(req.RemoveBrokerIDs))) != len(req.RemoveBrokerIDs) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("remove_broker_ids names a broker twice: %v", req.RemoveBrokerIDs))
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	current := s.c.Brokers()
	if l := s.latest; l != nil && sameRequest(l.req, req) {
		// Idempotent while it runs, and after it succeeded as long as the
		// cluster still has the count it asked for.
		if !l.op.State.Done() || (l.op.State == platform.OperationSucceeded && len(current) == req.BrokerCount) {
			writeJSON(w, http.StatusAccepted, platform.SetBrokerCountResponse{Operation: l.op})
			return
		}
	}
	if l := s.latest; l != nil && !l.op.State.Done() {
		writeError(w, http.StatusConflict, fmt.Sprintf(
			"operation %s is %s, taking the cluster to %d brokers; wait until it ends, or repeat its own request",
			l.op.ID, l.op.State, l.target))
		return
	}

	op, msg := s.plan(req, current)
	if op == nil {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	s.ops[op.op.ID] = op
	s.latest = op
	if len(op.add) == 0 && len(op.remove) == 0 && len(op.reuse) == 0 {
		op.op.State = platform.OperationSucceeded
		op.op.Message = fmt.Sprintf("the cluster already has %d brokers", req.BrokerCount)
	} else {
		s.wg.Add(1)
		go s.execute(op)
	}
	if len(current) == req.BrokerCount && len(op.add) > 0 {
		s.c.opts.Logf("kafkatest: scaling operation %s: replacing brokers %v (%d brokers, then %d once they are removed)",
			op.op.ID, req.RemoveBrokerIDs, op.target, req.BrokerCount)
	} else {
		s.c.opts.Logf("kafkatest: scaling operation %s: %d -> %d brokers", op.op.ID, len(current), req.BrokerCount)
	}
	writeJSON(w, http.StatusAccepted, platform.SetBrokerCountResponse{Operation: op.op})
}

// plan turns a request into an operation against the current brokers, or
// explains why the request cannot be carried out.
func (s *ScalingAPI) plan(req platform.SetBrokerCountRequest, current []Broker) (*operation, string) {
	id, err := newOperationID()
	if err != nil {
		return nil, err.Error()
	}
	op := &operation{
		op:     platform.Operation{ID: id, State: platform.OperationPending},
		req:    req,
		target: req.BrokerCount,
	}
	have := len(current)
	switch {
	case req.BrokerCount > have:
		if len(req.RemoveBrokerIDs) > 0 {
			return nil, fmt.Sprintf("remove_broker_ids %v only applies to a scale-in; the cluster has %d brokers and broker_count is %d",
				req.RemoveBrokerIDs, have, req.BrokerCount)
		}
		op.add = s.c.planRacks(req.BrokerCount - have)
	case req.BrokerCount < have:
		leaving := have - req.BrokerCount
		if len(req.RemoveBrokerIDs) == 0 {
			for _, b := range current[have-leaving:] { // current is sorted by id
				op.remove = append(op.remove, b.ID)
			}
			break
		}
		if len(req.RemoveBrokerIDs) != leaving {
			return nil, fmt.Sprintf("remove_broker_ids names %d brokers %v, but going from %d to %d brokers removes %d",
				len(req.RemoveBrokerIDs), req.RemoveBrokerIDs, have, req.BrokerCount, leaving)
		}
		for _, rid := range req.RemoveBrokerIDs {
			if !slices.ContainsFunc(current, func(b Broker) bool { return b.ID == rid }) {
				return nil, fmt.Sprintf("remove_broker_ids names broker %d, which is not in the cluster (brokers: %v)", rid, brokerIDs(current))
			}
		}
		op.remove = req.RemoveBrokerIDs
	default:
		// The same count with brokers named is a replacement: start as
		// many new brokers, each in the rack of one it replaces. The named
		// brokers stay until the caller has drained them and asks again,
		// when the count is above the target and this is a scale-in.
		// Named brokers already gone need nothing: the contract answers a
		// count the cluster runs, none of the named brokers present, with
		// an operation already SUCCEEDED.
		for _, rid := range req.RemoveBrokerIDs {
			i := slices.IndexFunc(current, func(b Broker) bool { return b.ID == rid })
			switch {
			case i < 0:
			case s.ReuseIDs && !current[i].Running:
				op.reuse = append(op.reuse, rid)
			default:
				op.add = append(op.add, current[i].Rack)
			}
		}
		op.target = have + len(op.add)
	}
	return op, ""
}

func (s *ScalingAPI) execute(op *operation) {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(s.ctx, opTimeout)
	defer cancel()
	s.setState(op, platform.OperationRunning, "")

	var err error
	switch {
	case len(op.reuse) > 0:
		err = s.restartEmpty(ctx, op)
	case len(op.add) > 0:
		err = s.scaleOut(ctx, op)
	default:
		err = s.scaleIn(ctx, op)
	}
	if err != nil {
		s.c.opts.Logf("kafkatest: scaling operation %s failed: %v", op.op.ID, err)
		s.setState(op, platform.OperationFailed, err.Error())
		return
	}
	s.c.opts.Logf("kafkatest: scaling operation %s succeeded", op.op.ID)
	s.setState(op, platform.OperationSucceeded, fmt.Sprintf("the cluster has %d brokers", op.target))
}

func (s *ScalingAPI) scaleOut(ctx context.Context, op *operation) error {
	s.setState(op, platform.OperationRunning, fmt.Sprintf("starting %d brokers in racks %v", len(op.add), op.add))
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ids := make([]int32, len(op.add))
	errs := make([]error, len(op.add))
	var wg sync.WaitGroup
	for i, rack := range op.add {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = s.c.AddBroker(ctx, rack)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("starting brokers: %w", err)
	}
	slices.Sort(ids)
	s.setState(op, platform.OperationRunning, fmt.Sprintf("brokers %v are unfenced", ids))
	return nil
}

func (s *ScalingAPI) restartEmpty(ctx context.Context, op *operation) error {
	for _, id := range op.reuse {
		s.setState(op, platform.OperationRunning, fmt.Sprintf("starting broker %d again on an empty disk", id))
		if err := s.c.RestartBrokerWithEmptyDisk(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

func (s *ScalingAPI) scaleIn(ctx context.Context, op *operation) error {
	for _, id := range op.remove {
		s.setState(op, platform.OperationRunning, fmt.Sprintf("stopping broker %d", id))
		if err := s.c.StopBroker(ctx, id); err != nil {
			return fmt.Errorf("stopping broker %d: %w", id, err)
		}
	}
	for _, id := range op.remove {
		s.setState(op, platform.OperationRunning, fmt.Sprintf("unregistering broker %d", id))
		if err := s.c.UnregisterBroker(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

func (s *ScalingAPI) setState(op *operation, state platform.OperationState, msg string) {
	s.mu.Lock()
	op.op.State, op.op.Message = state, msg
	s.mu.Unlock()
}

// planRacks picks racks for k new brokers: each goes to the rack with the
// fewest brokers so far, ties broken by the order of Options.Racks, which
// is round-robin from an even start.
func (c *Cluster) planRacks(k int) []string {
	c.mu.Lock()
	count := map[string]int{}
	for _, n := range c.brokers {
		count[n.rack]++
	}
	c.mu.Unlock()
	racks := make([]string, k)
	for i := range racks {
		best := c.opts.Racks[0]
		for _, r := range c.opts.Racks {
			if count[r] < count[best] {
				best = r
			}
		}
		count[best]++
		racks[i] = best
	}
	return racks
}

func sameRequest(a, b platform.SetBrokerCountRequest) bool {
	return a.BrokerCount == b.BrokerCount && slices.Equal(a.RemoveBrokerIDs, b.RemoveBrokerIDs)
}

func brokerIDs(bs []Broker) []int32 {
	ids := make([]int32, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	return ids
}

func newOperationID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "op-" + hex.EncodeToString(b[:]), nil
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; use %s", r.Method, r.URL.Path, allow))
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, platform.ErrorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
