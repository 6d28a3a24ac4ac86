package kafka

import (
	"math"
	"reflect"
	"testing"
)

// Bits as Kafka sets them: bit i is kmsg.ACLOperation i (READ 3, WRITE 4,
// CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10,
// ALTER_CONFIGS 11).
const (
	bitRead           = 1 << 3
	bitCreate         = 1 << 5
	bitAlter          = 1 << 7
	bitDescribe       = 1 << 8
	bitDescribeConfig = 1 << 10
	bitAlterConfigs   = 1 << 11
)

func TestDecodeAuthorizedOps(t *testing.T) {
	if a := decodeAuthorizedOps(math.MinInt32); a.known || a.allows("DESCRIBE") {
		t.Errorf("the omitted marker decoded as %+v, want unknown", a)
	}
	a := decodeAuthorizedOps(bitDescribe | bitAlterConfigs)
	for op, want := range map[ACLOperation]bool{"DESCRIBE": true, "ALTER_CONFIGS": true, "alter_configs": true, "ALTER": false, "READ": false, "BOGUS": false} {
		if got := a.allows(op); got != want {
			t.Errorf("bits DESCRIBE|ALTER_CONFIGS allows(%s) = %v, want %v", op, got, want)
		}
	}
	if a := decodeAuthorizedOps(0); !a.known || a.allows("DESCRIBE") {
		t.Errorf("an empty bitfield decoded as %+v, want known and nothing allowed", a)
	}
}

func TestAuthViewMissing(t *testing.T) {
	yes, no := true, false
	view := authView{
		cluster: decodeAuthorizedOps(bitDescribe | bitDescribeConfig),
		topics: map[string]resourceView{
			"orders":   {exists: true, ops: decodeAuthorizedOps(bitDescribe | bitRead | bitDescribeConfig)},
			"invoices": {exists: true, ops: decodeAuthorizedOps(bitDescribe | bitAlter | bitAlterConfigs | bitCreate)},
			"secret":   {ops: deniedAll},
			"new-ok":   {createAllowed: &yes},
			"new-no":   {createAllowed: &no},
		},
		groups: map[string]resourceView{
			"billing": {exists: true, ops: decodeAuthorizedOps(bitDescribe | bitRead)},
			"fresh":   {}, // answered "no such group": DESCRIBE was allowed
			"hidden":  {ops: deniedAll},
		},
	}
	need := []Permission{
		{Kind: ResourceCluster, Operation: "ALTER", Why: "to reassign partitions"},
		{Kind: ResourceCluster, Operation: "DESCRIBE"},
		{Kind: ResourceTopic, Name: "orders", Operation: "ALTER", Why: "to add partitions"},
		{Kind: ResourceTopic, Name: "orders", Operation: "DESCRIBE"},
		{Kind: ResourceTopic, Name: "invoices", Operation: "ALTER"},
		{Kind: ResourceTopic, Name: "invoices", Operation: "CREATE"},
		{Kind: ResourceTopic, Name: "secret", Operation: "DESCRIBE"},
		{Kind: ResourceTopic, Name: "new-ok", Operation: "CREATE"},
		{Kind: ResourceTopic, Name: "new-no", Operation: "CREATE", Why: "to create it"},
		{Kind: ResourceTopic, Name: "not-asked", Operation: "DESCRIBE"},
		{Kind: ResourceGroup, Name: "billing", Operation: "DESCRIBE"},
		{Kind: ResourceGroup, Name: "billing", Operation: "DELETE"},
		{Kind: ResourceGroup, Name: "fresh", Operation: "DESCRIBE"},
		{Kind: ResourceGroup, Name: "hidden", Operation: "DESCRIBE"},
	}
	want := []Permission{need[0], need[2], need[6], need[8], need[9], need[11], need[13]}
	if got := view.missing(need); !reflect.DeepEqual(got, want) {
		t.Errorf("missing:\n got %+v\nwant %+v", got, want)
	}

	// CREATE on the cluster covers every topic.
	view.cluster = decodeAuthorizedOps(bitDescribe | bitCreate)
	if got := view.missing([]Permission{{Kind: ResourceTopic, Name: "new-no", Operation: "CREATE"}}); len(got) != 0 {
		t.Errorf("CREATE on the cluster should allow creating any topic, missing %+v", got)
	}
}

func TestMissingPermissionsErrorText(t *testing.T) {
	e := &MissingPermissionsError{Missing: []Permission{
		{Kind: ResourceTopic, Name: "orders", Operation: "ALTER", Why: "to add partitions"},
		{Kind: ResourceCluster, Operation: "ALTER_CONFIGS", Why: "to set replication throttles on brokers"},
		{Kind: ResourceGroup, Name: "billing", Operation: "DESCRIBE"},
	}}
	want := `principal lacks ALTER on topic "orders" (needed to add partitions); ` +
		`principal lacks ALTER_CONFIGS on the cluster (needed to set replication throttles on brokers); ` +
		`principal lacks DESCRIBE on group "billing"`
	if got := e.Error(); got != want {
		t.Errorf("Error():\n got %s\nwant %s", got, want)
	}
	e.Principal = "User:reader"
	e.Missing = e.Missing[:1]
	if got, want := e.Error(), `principal User:reader lacks ALTER on topic "orders" (needed to add partitions)`; got != want {
		t.Errorf("Error() = %s, want %s", got, want)
	}
}

func TestDedupPermissions(t *testing.T) {
	got := dedupPermissions([]Permission{
		{Kind: ResourceCluster, Name: "ignored", Operation: "alter", Why: "first"},
		{Kind: ResourceCluster, Operation: "ALTER", Why: "second"},
		{Kind: ResourceTopic, Name: "a", Operation: "ALTER"},
	})
	want := []Permission{{Kind: ResourceCluster, Operation: "ALTER", Why: "first"}, {Kind: ResourceTopic, Name: "a", Operation: "ALTER"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dedup: got %+v, want %+v", got, want)
	}
}
