package main

import (
	"bytes"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

func topicDesc(name string, partitions int, rf int, cfg map[string]string) kafka.TopicDescription {
	d := kafka.TopicDescription{Name: name, Configs: cfg}
	for p := range partitions {
		reps := make([]int32, rf)
		for i := range reps {
			reps[i] = int32(i + 1)
		}
		d.Partitions = append(d.Partitions, kafka.PartitionState{Topic: name, Partition: int32(p), Replicas: reps})
	}
	return d
}

func TestResourceNamesAreValidAndUnique(t *testing.T) {
	var ts []kafka.TopicDescription
	// Sorted as generateImportConfig sorts them.
	for _, n := range []string{"-x", "1orders", "_priv", "a-b", "a.b", "a_b", "a_b_2", "orders.v1"} {
		ts = append(ts, kafka.TopicDescription{Name: n})
	}
	got := resourceNames(ts)
	// a.b collides with a-b: _2 is another topic's own name, so _3.
	want := []string{"_x", "topic_1orders", "_priv", "a_b", "a_b_3", "a_b_4", "a_b_2", "orders_v1"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
}

func TestSelectorLeavesInternalTopicsOut(t *testing.T) {
	sel, err := newSelector("", "^app", false)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2]bool{
		"app.orders":                   {true, false},
		"app-store-changelog":          {false, true},
		"app-KSTREAM-0001-repartition": {false, true},
		"app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic": {false, true},
		"other": {false, false},
	} {
		if ok, skipped := sel.match(name); ok != want[0] || skipped != want[1] {
			t.Errorf("%s: match %v skipped %v, want %v", name, ok, skipped, want)
		}
	}
	sel, _ = newSelector("__", "", false)
	if ok, skipped := sel.match("__kafkascale_operations"); ok || !skipped {
		t.Errorf("__kafkascale_operations chosen without --include-internal")
	}
	sel, _ = newSelector("__", "", true)
	if ok, _ := sel.match("__kafkascale_operations"); !ok {
		t.Errorf("__kafkascale_operations left out with --include-internal")
	}
	if _, err := newSelector("", "", false); err == nil || !strings.Contains(err.Error(), "--prefix or --regex") {
		t.Errorf("no selection: %v", err)
	}
	if _, err := newSelector("", "(", false); err == nil || !strings.Contains(err.Error(), `--regex "("`) {
		t.Errorf("bad regex: %v", err)
	}
}

// The output is exactly what `terraform fmt` writes, holds the values the
// provider reads back, and leaves out kafkascale's throttle lists.
func TestGenerateImportConfig(t *testing.T) {
	mixed := topicDesc("shop.mixed", 2, 2, nil)
	mixed.Partitions[1].Replicas = []int32{1, 2, 3}
	topics := []kafka.TopicDescription{
		topicDesc("shop.orders", 6, 3, map[string]string{"cleanup.policy": "compact", "retention.ms": "86400000",
			kafka.ConfigLeaderThrottledReplicas: "0:1"}),
		topicDesc("shop.plain", 1, 1, map[string]string{}),
		mixed,
		topicDesc("shop-app-store-changelog", 6, 3, nil),
		topicDesc("billing", 3, 3, nil),
	}
	sel, _ := newSelector("shop", "", false)
	ic := generateImportConfig(topics, sel, &clusterImport{id: "abc", brokerCount: 3}, `kafkascale import-config --prefix "shop"`)
	if ic.topics != 3 || !reflect.DeepEqual(ic.skipped, []string{"shop-app-store-changelog"}) || !reflect.DeepEqual(ic.mixedRF, []string{"shop.mixed"}) {
		t.Fatalf("topics %d, skipped %v, mixed %v", ic.topics, ic.skipped, ic.mixedRF)
	}
	got := string(ic.hcl)
	for _, want := range []string{
		"import {\n  to = kafkascale_cluster.this\n  id = \"abc\"\n}\n",
		"resource \"kafkascale_cluster\" \"this\" {\n  broker_count = 3\n  scaling {\n    external {\n    }\n  }\n}\n",
		"import {\n  to = kafkascale_topic.shop_orders\n  id = \"shop.orders\"\n}\n",
		"resource \"kafkascale_topic\" \"shop_orders\" {\n  name               = \"shop.orders\"\n  partitions         = 6\n  replication_factor = 3\n  config = {\n    \"cleanup.policy\" = \"compact\"\n    \"retention.ms\"   = \"86400000\"\n  }\n}\n",
		"resource \"kafkascale_topic\" \"shop_plain\" {\n  name               = \"shop.plain\"\n  partitions         = 1\n  replication_factor = 1\n}\n",
		"# The partitions of shop.mixed have replication factors 2, 3",
		"  replication_factor = 3\n}\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks\n%s\nin:\n%s", want, got)
		}
	}
	if strings.Contains(got, "throttled") || strings.Contains(got, "billing") || strings.Contains(got, "changelog") {
		t.Errorf("the output holds a throttle list, an unselected or an internal topic:\n%s", got)
	}
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("no terraform on PATH: formatting not checked")
	}
	cmd := exec.Command(tf, "fmt", "-")
	cmd.Stdin = strings.NewReader(got)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("terraform fmt: %v\n%s\n%s", err, errb.String(), got)
	}
	if out.String() != got {
		t.Fatalf("not as terraform fmt writes it:\n%s\nterraform fmt:\n%s", got, out.String())
	}
}

// Config values reach Terraform as they are on the topic: quotes,
// backslashes and template sequences (${, %{) are escaped, not evaluated.
func TestGenerateImportConfigRoundTripsValues(t *testing.T) {
	want := map[string]string{"a.quote": `say "hi" \ bye`, "b.template": "${var.x}%{if}", "c.empty": "", "d.list": "compact, delete"}
	sel, _ := newSelector("t", "", false)
	ic := generateImportConfig([]kafka.TopicDescription{topicDesc("t", 1, 1, want)}, sel, nil, "test")
	f, diags := hclsyntax.ParseConfig(ic.hcl, "gen.tf", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("the output does not parse: %v\n%s", diags, ic.hcl)
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		t.Fatalf("parsed body is %T", f.Body)
	}
	var got map[string]string
	for _, b := range body.Blocks {
		if b.Type != "resource" {
			continue
		}
		v, diags := b.Body.Attributes["config"].Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("config does not evaluate without variables: %v", diags)
		}
		got = map[string]string{}
		for k, x := range v.AsValueMap() {
			got[k] = x.AsString()
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("config reads back as %q, want %q\n%s", got, want, ic.hcl)
	}
}
