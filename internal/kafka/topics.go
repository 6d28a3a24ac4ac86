package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicErrorKind sorts a per-topic failure by what the user would change to
// fix it, so callers can point at the right setting without knowing Kafka's
// error codes.
type TopicErrorKind int

// The kinds of per-topic failure.
const (
	TopicErrorOther TopicErrorKind = iota
	TopicErrorExists
	TopicErrorNotFound
	TopicErrorInvalidName
	TopicErrorInvalidPartitions
	TopicErrorInvalidReplicationFactor
	TopicErrorInvalidReplicaAssignment
	TopicErrorInvalidConfig
	TopicErrorPolicy
)

// TopicError is the failure of one topic inside a request that otherwise
// went through. Message is the broker's explanation, when it gave one.
type TopicError struct {
	Topic   string
	Err     error
	Message string
}

func (e *TopicError) Error() string {
	if e.Message != "" && !strings.Contains(e.Err.Error(), e.Message) {
		return fmt.Sprintf("topic %s: %v: %s", e.Topic, e.Err, e.Message)
	}
	return fmt.Sprintf("topic %s: %v", e.Topic, e.Err)
}

func (e *TopicError) Unwrap() error { return e.Err }

// Kind says which setting the failure is about.
func (e *TopicError) Kind() TopicErrorKind {
	switch {
	case errors.Is(e.Err, kerr.TopicAlreadyExists):
		return TopicErrorExists
	case errors.Is(e.Err, kerr.UnknownTopicOrPartition), errors.Is(e.Err, kerr.UnknownTopicID):
		return TopicErrorNotFound
	case errors.Is(e.Err, kerr.InvalidTopicException):
		return TopicErrorInvalidName
	case errors.Is(e.Err, kerr.InvalidPartitions):
		return TopicErrorInvalidPartitions
	case errors.Is(e.Err, kerr.InvalidReplicationFactor):
		return TopicErrorInvalidReplicationFactor
	case errors.Is(e.Err, kerr.InvalidReplicaAssignment):
		return TopicErrorInvalidReplicaAssignment
	case errors.Is(e.Err, kerr.InvalidConfig):
		return TopicErrorInvalidConfig
	case errors.Is(e.Err, kerr.PolicyViolation):
		return TopicErrorPolicy
	}
	return TopicErrorOther
}

// TopicErrors collects per-topic failures of one request, sorted by topic,
// so that one bad topic does not hide the others.
type TopicErrors []*TopicError

func (es TopicErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	if len(es) == 1 {
		return parts[0]
	}
	return fmt.Sprintf("%d topics failed: %s", len(es), strings.Join(parts, "; "))
}

// Unwrap lets errors.As find the *TopicError of a single failure.
func (es TopicErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (es TopicErrors) orNil() error {
	if len(es) == 0 {
		return nil
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Topic < es[j].Topic })
	return es
}

// TopicErrorOf returns the per-topic failure inside err, if there is one.
func TopicErrorOf(err error) (*TopicError, bool) {
	var te *TopicError
	ok := errors.As(err, &te)
	return te, ok
}

func topicError(topic string, code int16, msg *string) *TopicError {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	te := &TopicError{Topic: topic, Err: err}
	if msg != nil {
		te.Message = *msg
	}
	return te
}

func sortedConfigs(configs map[string]string) []string {
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// buildCreateTopic builds a CreateTopics request that places every replica
// explicitly, so placement is the engine's decision and not the
// controller's. assignment maps partition index to ordered replicas and must
// cover 0..n-1.
func buildCreateTopic(topic string, assignment map[int32][]int32, configs map[string]string) (*kmsg.CreateTopicsRequest, error) {
	if len(assignment) == 0 {
		return nil, fmt.Errorf("topic %s: no partitions to create", topic)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = topic
	t.NumPartitions, t.ReplicationFactor = -1, -1
	parts := make([]int32, 0, len(assignment))
	for p := range assignment {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for i, p := range parts {
		if p != int32(i) {
			return nil, fmt.Errorf("topic %s: partitions must be numbered 0..%d, partition %d is missing", topic, len(parts)-1, i)
		}
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition = p
		ra.Replicas = append([]int32(nil), assignment[p]...)
		t.ReplicaAssignment = append(t.ReplicaAssignment, ra)
	}
	t.Configs = createConfigs(configs)
	req.Topics = append(req.Topics, t)
	return req, nil
}

// buildValidateCreateTopic builds the dry run of creating a topic by count:
// the broker checks the name, the counts against the live brokers, the
// configs and any creation policy, and creates nothing.
func buildValidateCreateTopic(topic string, partitions, rf int, configs map[string]string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.ValidateOnly = true
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = topic
	t.NumPartitions, t.ReplicationFactor = int32(partitions), int16(rf)
	t.Configs = createConfigs(configs)
	req.Topics = append(req.Topics, t)
	return req
}

func createConfigs(configs map[string]string) []kmsg.CreateTopicsRequestTopicConfig {
	var out []kmsg.CreateTopicsRequestTopicConfig
	for _, k := range sortedConfigs(configs) {
		v := configs[k]
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, &v
		out = append(out, c)
	}
	return out
}

// CreateTopic creates a topic with an explicit replica assignment. A topic
// Kafka refuses comes back as TopicErrors (see TopicErrorOf).
func (c *Client) CreateTopic(ctx context.Context, topic string, assignment map[int32][]int32, configs map[string]string) error {
	req, err := buildCreateTopic(topic, assignment, configs)
	if err != nil {
		return err
	}
	return c.createTopics(ctx, "creating topic "+topic, req)
}

// ValidateCreateTopic asks the brokers whether CreateTopic would succeed
// with these counts and configs, without creating anything.
func (c *Client) ValidateCreateTopic(ctx context.Context, topic string, partitions, rf int, configs map[string]string) error {
	return c.createTopics(ctx, "validating topic "+topic, buildValidateCreateTopic(topic, partitions, rf, configs))
}

func (c *Client) createTopics(ctx context.Context, what string, req *kmsg.CreateTopicsRequest) error {
	return c.topicRequest(ctx, what, func(ctx context.Context, refused func(string, int16, *string)) error {
		req.TimeoutMillis = int32(c.cfg.RequestTimeout.Milliseconds())
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			refused(t.Topic, t.ErrorCode, t.ErrorMessage)
		}
		return nil
	})
}

// topicRequest sends one request about topics within the request timeout.
// send reports each topic's answer to refused; the topics Kafka refused
// come back as TopicErrors, the others did change.
func (c *Client) topicRequest(ctx context.Context, what string, send func(ctx context.Context, refused func(topic string, code int16, msg *string)) error) error {
	var failed TopicErrors
	err := c.withTimeout(ctx, what, func(ctx context.Context) error {
		return send(ctx, func(topic string, code int16, msg *string) {
			if te := topicError(topic, code, msg); te != nil {
				failed = append(failed, te)
			}
		})
	})
	if err != nil {
		return err
	}
	return failed.orNil()
}

// NewPartitions grows one topic to Count partitions.
type NewPartitions struct {
	Topic string
	// Count is the topic's partition count once the request is done.
	Count int
	// Assignment holds, for each new partition in index order, its ordered
	// replicas (the first is the preferred leader). Empty lets the
	// controller place them.
	Assignment [][]int32
}

// buildCreatePartitions builds one CreatePartitions request for every topic:
// KRaft commits it as one batch, although each topic can still fail alone.
func buildCreatePartitions(grow []NewPartitions, validateOnly bool) (*kmsg.CreatePartitionsRequest, error) {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.ValidateOnly = validateOnly
	seen := make(map[string]bool, len(grow))
	var problems []string
	for _, g := range grow {
		switch {
		case g.Topic == "":
			problems = append(problems, "a topic name is empty")
			continue
		case seen[g.Topic]:
			problems = append(problems, fmt.Sprintf("topic %s is listed twice", g.Topic))
			continue
		case g.Count < 1:
			problems = append(problems, fmt.Sprintf("topic %s: partition count %d is below 1", g.Topic, g.Count))
			continue
		}
		seen[g.Topic] = true
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic = g.Topic
		t.Count = int32(g.Count)
		for i, rs := range g.Assignment {
			if len(rs) == 0 {
				problems = append(problems, fmt.Sprintf("topic %s: new partition %d of the assignment has no replicas", g.Topic, i))
				continue
			}
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = append([]int32(nil), rs...)
			t.Assignment = append(t.Assignment, a)
		}
		req.Topics = append(req.Topics, t)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	sort.Slice(req.Topics, func(i, j int) bool { return req.Topics[i].Topic < req.Topics[j].Topic })
	return req, nil
}

// CreatePartitions grows every topic in one request. A failed request is
// the returned error; topics Kafka refused come back as TopicErrors, and the
// others did grow: check every one, never assume all or nothing. Empty
// input sends nothing.
func (c *Client) CreatePartitions(ctx context.Context, grow ...NewPartitions) error {
	return c.createPartitions(ctx, grow, false)
}

// ValidateCreatePartitions is the dry run of CreatePartitions: the brokers
// check counts, assignments and policies, and nothing grows.
func (c *Client) ValidateCreatePartitions(ctx context.Context, grow ...NewPartitions) error {
	return c.createPartitions(ctx, grow, true)
}

func (c *Client) createPartitions(ctx context.Context, grow []NewPartitions, validateOnly bool) error {
	if len(grow) == 0 {
		return nil
	}
	req, err := buildCreatePartitions(grow, validateOnly)
	if err != nil {
		return err
	}
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		names[i] = t.Topic
	}
	return c.topicRequest(ctx, "adding partitions to "+strings.Join(names, ", "), func(ctx context.Context, refused func(string, int16, *string)) error {
		req.TimeoutMillis = int32(c.cfg.RequestTimeout.Milliseconds())
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			refused(t.Topic, t.ErrorCode, t.ErrorMessage)
		}
		return nil
	})
}

// buildAlterTopicConfigs builds an IncrementalAlterConfigs request: SET for
// every key of set, DELETE for every key of del. Keys nobody names are left
// alone, so settings made by others (the throttled-replica lists of a
// running reassignment, say) survive.
func buildAlterTopicConfigs(topic string, set map[string]string, del []string, validateOnly bool) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceTypeTopic
	r.ResourceName = topic
	for _, k := range sortedConfigs(set) {
		v := set[k]
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = k, kmsg.IncrementalAlterConfigOpSet, &v
		r.Configs = append(r.Configs, cfg)
	}
	del = append([]string(nil), del...)
	sort.Strings(del)
	for _, k := range del {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op = k, kmsg.IncrementalAlterConfigOpDelete
		r.Configs = append(r.Configs, cfg)
	}
	req.Resources = append(req.Resources, r)
	return req
}

// AlterTopicConfigs sets and deletes a topic's own configs in one
// IncrementalAlterConfigs request. Nothing to change sends nothing.
func (c *Client) AlterTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string) error {
	return c.alterTopicConfigs(ctx, topic, set, del, false)
}

// ValidateAlterTopicConfigs is the dry run of AlterTopicConfigs: the broker
// checks every key and value and changes nothing.
func (c *Client) ValidateAlterTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string) error {
	return c.alterTopicConfigs(ctx, topic, set, del, true)
}

func (c *Client) alterTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string, validateOnly bool) error {
	if len(set) == 0 && len(del) == 0 {
		return nil
	}
	req := buildAlterTopicConfigs(topic, set, del, validateOnly)
	return c.topicRequest(ctx, "changing the configs of topic "+topic, func(ctx context.Context, refused func(string, int16, *string)) error {
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		for _, r := range resp.Resources {
			refused(r.ResourceName, r.ErrorCode, r.ErrorMessage)
		}
		return nil
	})
}

// DeleteTopic deletes a topic and its data. A topic that is already gone is
// not an error.
func (c *Client) DeleteTopic(ctx context.Context, topic string) error {
	var failed TopicErrors
	err := c.withTimeout(ctx, "deleting topic "+topic, func(ctx context.Context) error {
		resp, err := c.admin.DeleteTopics(ctx, topic)
		if err != nil {
			return err
		}
		for _, r := range resp {
			if r.Err == nil || errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				continue
			}
			failed = append(failed, &TopicError{Topic: r.Topic, Err: r.Err, Message: r.ErrMessage})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return failed.orNil()
}
