package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ResourceKind is the kind of Kafka resource a permission applies to.
type ResourceKind string

// Resource kinds, in Kafka's ACL words.
const (
	ResourceCluster ResourceKind = "cluster"
	ResourceTopic   ResourceKind = "topic"
	ResourceGroup   ResourceKind = "group"
)

// ACLOperation is an operation in Kafka's ACL words.
type ACLOperation string

// The operations kafkascale needs.
const (
	OpAlter           ACLOperation = "ALTER"
	OpAlterConfigs    ACLOperation = "ALTER_CONFIGS"
	OpCreate          ACLOperation = "CREATE"
	OpDelete          ACLOperation = "DELETE"
	OpDescribe        ACLOperation = "DESCRIBE"
	OpDescribeConfigs ACLOperation = "DESCRIBE_CONFIGS"
	OpRead            ACLOperation = "READ"
	OpWrite           ACLOperation = "WRITE"
)

// AllTopics as a topic Name asks for the permission on every topic the
// principal can see (one Metadata request); missing ones are reported per
// topic. Kafka topic names cannot contain '*'.
const AllTopics = "*"

// Permission is one operation an apply needs on one resource.
type Permission struct {
	Kind ResourceKind
	// Name is the topic or group, or AllTopics; "" for the cluster.
	Name      string
	Operation ACLOperation
	// Why completes "needed ...", e.g. "to add partitions".
	Why string
}

// MissingPermissionsError lists every permission the principal lacks, so
// that one apply tells the user every ACL to add, not just the first.
type MissingPermissionsError struct {
	// Principal is the Kafka principal, when the client knows it (SASL:
	// "User:<username>"); "" otherwise (a certificate's principal depends
	// on the brokers' ssl.principal.mapping.rules).
	Principal string
	Missing   []Permission
}

func (e *MissingPermissionsError) Error() string {
	who := "principal"
	if e.Principal != "" {
		who += " " + e.Principal
	}
	parts := make([]string, len(e.Missing))
	for i, p := range e.Missing {
		parts[i] = fmt.Sprintf("%s lacks %s on %s", who, p.Operation, p.resource())
		if p.Why != "" {
			parts[i] += " (needed " + p.Why + ")"
		}
	}
	return strings.Join(parts, "; ")
}

func (p Permission) resource() string {
	switch p.Kind {
	case ResourceCluster:
		return "the cluster"
	default:
		return fmt.Sprintf("%s %q", p.Kind, p.Name)
	}
}

// CheckPermissions asks Kafka which operations this client's principal may
// perform (KIP-430's authorized operations) and returns a
// *MissingPermissionsError naming every permission in need it lacks, nil if
// it has them all, or the error of a request that failed. It changes
// nothing on the cluster. It sends at most one request per kind of
// resource: DescribeCluster for the cluster, one Metadata request for all
// topics, one DescribeGroups per group coordinator.
//
// How each case is judged, as Kafka itself would:
//   - A resource the principal may not DESCRIBE reports no operations, so
//     every permission on it is missing.
//   - CREATE on a topic is needed only to create it: a topic that exists
//     needs none. For one that does not, CREATE on the cluster grants it,
//     as CreateTopics authorizes; without it, a validate-only CreateTopics
//     (which creates nothing) asks the authorizer about the topic's name,
//     so literal and prefixed topic ACLs count too.
//   - A topic or group that does not exist has no operations to report.
//     DESCRIBE on it is judged by whether Kafka said "unknown" (allowed) or
//     "not authorized"; its other operations cannot be known before it
//     exists and are left to Kafka at the time of the operation.
//
// On a cluster without an authorizer every operation is reported allowed.
func (c *Client) CheckPermissions(ctx context.Context, need []Permission) error {
	need = dedupPermissions(need)
	if len(need) == 0 {
		return nil
	}
	for _, p := range need {
		if _, err := kmsg.ParseACLOperation(string(p.Operation)); err != nil {
			return fmt.Errorf("checking permissions: unknown operation %q on %s", p.Operation, p.resource())
		}
	}
	var view authView
	err := c.withTimeout(ctx, "checking the principal's permissions", func(ctx context.Context) error {
		var err error
		view, err = c.readAuthView(ctx, need)
		return err
	})
	if err != nil {
		return err
	}
	missing := view.missing(need)
	if len(missing) == 0 {
		return nil
	}
	return &MissingPermissionsError{Principal: c.principal(), Missing: missing}
}

func (c *Client) principal() string {
	if c.cfg.SASL != nil && c.cfg.SASL.Username != "" {
		return "User:" + c.cfg.SASL.Username
	}
	return ""
}

func dedupPermissions(need []Permission) []Permission {
	out := make([]Permission, 0, len(need))
	seen := map[[3]string]bool{}
	for _, p := range need {
		if p.Kind == ResourceCluster {
			p.Name = ""
		}
		p.Operation = ACLOperation(strings.ToUpper(string(p.Operation)))
		k := [3]string{string(p.Kind), p.Name, string(p.Operation)}
		if !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

// authorizedOps is a decoded authorized-operations bitfield. Unknown means
// Kafka left it out (the resource does not exist, or was not described).
type authorizedOps struct {
	known bool
	ops   []kadm.ACLOperation
}

func decodeAuthorizedOps(bitfield int32) authorizedOps {
	if bitfield == math.MinInt32 {
		return authorizedOps{}
	}
	return authorizedOps{known: true, ops: kadm.DecodeACLOperations(bitfield)}
}

// deniedAll is a resource the principal may not even describe.
var deniedAll = authorizedOps{known: true}

func (a authorizedOps) allows(op ACLOperation) bool {
	o, err := kmsg.ParseACLOperation(string(op))
	return err == nil && a.known && slices.Contains(a.ops, o)
}

// resourceView is what Kafka said about one topic or group.
type resourceView struct {
	ops    authorizedOps
	exists bool
	// createAllowed is the answer of a validate-only CreateTopics, for a
	// topic that does not exist; nil when not asked.
	createAllowed *bool
}

// authView is everything Kafka said, keyed by resource name.
type authView struct {
	cluster authorizedOps
	topics  map[string]resourceView
	groups  map[string]resourceView
}

// missing judges need against the view; it is pure, for unit tests.
func (v authView) missing(need []Permission) []Permission {
	var out []Permission
	for _, p := range need {
		if p.Kind == ResourceTopic && p.Name == AllTopics {
			for _, name := range slices.Sorted(maps.Keys(v.topics)) {
				if t := v.topics[name]; t.exists && !judge(t, p.Operation) {
					q := p
					q.Name = name
					out = append(out, q)
				}
			}
			continue
		}
		if !v.allows(p) {
			out = append(out, p)
		}
	}
	return out
}

func (v authView) allows(p Permission) bool {
	switch p.Kind {
	case ResourceCluster:
		return v.cluster.allows(p.Operation)
	case ResourceTopic:
		t, ok := v.topics[p.Name]
		if !ok {
			return false
		}
		if p.Operation == OpCreate {
			if t.exists || v.cluster.allows(OpCreate) {
				return true
			}
			return t.createAllowed != nil && *t.createAllowed
		}
		return judge(t, p.Operation)
	case ResourceGroup:
		g, ok := v.groups[p.Name]
		return ok && judge(g, p.Operation)
	}
	return false
}

func judge(r resourceView, op ACLOperation) bool {
	if r.ops.known {
		return r.ops.allows(op)
	}
	// Unknown only for a resource Kafka said does not exist, which it says
	// only to a principal allowed to describe it.
	return !r.exists
}

func (c *Client) readAuthView(ctx context.Context, need []Permission) (authView, error) {
	view := authView{topics: map[string]resourceView{}, groups: map[string]resourceView{}}
	var topics, groups []string
	wantCluster := false
	for _, p := range need {
		switch p.Kind {
		case ResourceCluster:
			wantCluster = true
		case ResourceTopic:
			topics = append(topics, p.Name)
			wantCluster = wantCluster || p.Operation == OpCreate
		case ResourceGroup:
			groups = append(groups, p.Name)
		default:
			return view, fmt.Errorf("unknown resource kind %q", p.Kind)
		}
	}
	topics, groups = uniq(topics), uniq(groups)
	if wantCluster {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return view, err
		}
		if err := errWithMessage("DescribeCluster", resp.ErrorCode, resp.ErrorMessage); err != nil {
			return view, err
		}
		view.cluster = decodeAuthorizedOps(resp.ClusterAuthorizedOperations)
	}
	if len(topics) > 0 {
		if err := c.readTopicOps(ctx, topics, need, &view); err != nil {
			return view, err
		}
	}
	if len(groups) > 0 {
		if err := c.readGroupOps(ctx, groups, view.groups); err != nil {
			return view, err
		}
	}
	return view, nil
}

func (c *Client) readTopicOps(ctx context.Context, topics []string, need []Permission, view *authView) error {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	req.IncludeTopicAuthorizedOperations = true
	if !slices.Contains(topics, AllTopics) {
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	} // else nil Topics: every topic, named ones included
	resp, err := req.RequestWith(ctx, c.kgo)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if len(req.Topics) == 0 && !slices.Contains(topics, *t.Topic) && t.ErrorCode != 0 {
			continue // an all-topics listing only shows what it may
		}
		rv := resourceView{exists: true, ops: decodeAuthorizedOps(t.AuthorizedOperations)}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case err == nil:
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			// Kafka hides whether it exists; CREATE is asked below.
			rv = resourceView{ops: deniedAll}
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			rv = resourceView{}
		default:
			return fmt.Errorf("describing topic %s: %w", *t.Topic, err)
		}
		view.topics[*t.Topic] = rv
	}
	var unlisted []string
	for _, name := range topics {
		if _, ok := view.topics[name]; !ok && name != AllTopics {
			unlisted = append(unlisted, name)
		}
	}
	if len(unlisted) > 0 && len(req.Topics) == 0 {
		// An all-topics listing leaves out both the topics that do not
		// exist and those the principal may not describe; asking by name
		// tells them apart.
		return c.readTopicOps(ctx, unlisted, need, view)
	}
	if view.cluster.allows(OpCreate) {
		return nil
	}
	// CREATE on topics that may not exist: ask the authorizer by name.
	var ask []string
	for _, p := range need {
		if p.Kind != ResourceTopic || p.Operation != OpCreate {
			continue
		}
		if t := view.topics[p.Name]; !t.exists && !slices.Contains(ask, p.Name) {
			ask = append(ask, p.Name)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	creq := kmsg.NewPtrCreateTopicsRequest()
	creq.ValidateOnly = true
	creq.TimeoutMillis = 5000
	for _, name := range ask {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, -1, -1
		creq.Topics = append(creq.Topics, ct)
	}
	cresp, err := creq.RequestWith(ctx, c.kgo)
	if err != nil {
		return err
	}
	for _, t := range cresp.Topics {
		allowed := !errors.Is(kerr.ErrorForCode(t.ErrorCode), kerr.TopicAuthorizationFailed)
		rv := view.topics[t.Topic]
		rv.createAllowed = &allowed
		view.topics[t.Topic] = rv
	}
	return nil
}

func (c *Client) readGroupOps(ctx context.Context, groups []string, out map[string]resourceView) error {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = groups
	req.IncludeAuthorizedOperations = true
	for _, shard := range c.kgo.RequestSharded(ctx, req) {
		sent, _ := shard.Req.(*kmsg.DescribeGroupsRequest)
		if shard.Err != nil {
			// The coordinator lookup already needs DESCRIBE on the group.
			if errors.Is(shard.Err, kerr.GroupAuthorizationFailed) && sent != nil {
				for _, g := range sent.Groups {
					out[g] = resourceView{ops: deniedAll}
				}
				continue
			}
			return fmt.Errorf("describing groups: %w", shard.Err)
		}
		resp, err := responseAs[*kmsg.DescribeGroupsResponse](shard.Resp)
		if err != nil {
			return err
		}
		for _, g := range resp.Groups {
			rv := resourceView{exists: true, ops: decodeAuthorizedOps(g.AuthorizedOperations)}
			switch err := kerr.ErrorForCode(g.ErrorCode); {
			case err == nil && g.State != "Dead":
			case err == nil, errors.Is(err, kerr.GroupIDNotFound):
				// No classic group of that name (none yet, or one of the
				// consumer or streams protocol): Kafka answered only
				// because DESCRIBE is allowed.
				if !rv.ops.known {
					rv.exists = false
				}
			case errors.Is(err, kerr.GroupAuthorizationFailed):
				rv = resourceView{ops: deniedAll}
			default:
				return fmt.Errorf("describing group %s: %w", g.Group, err)
			}
			out[g.Group] = rv
		}
	}
	for _, g := range groups {
		if _, ok := out[g]; !ok {
			return fmt.Errorf("describing group %s: Kafka did not answer for it", g)
		}
	}
	return nil
}

func errWithMessage(what string, code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if msg != nil && *msg != "" {
		return fmt.Errorf("%s: %w: %s", what, err, *msg)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
