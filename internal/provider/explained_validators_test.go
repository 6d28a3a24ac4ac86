package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

var testExplanation = explanation{summary: "Widget count out of range", why: "Widgets come in pairs.", fix: "Set it to 2."}

func validateInt64(v validator.Int64, p path.Path, val types.Int64) diag.Diagnostics {
	var resp validator.Int64Response
	v.ValidateInt64(context.Background(), validator.Int64Request{Path: p, ConfigValue: val}, &resp)
	return resp.Diagnostics
}

func validateFloat64(v validator.Float64, p path.Path, val types.Float64) diag.Diagnostics {
	var resp validator.Float64Response
	v.ValidateFloat64(context.Background(), validator.Float64Request{Path: p, ConfigValue: val}, &resp)
	return resp.Diagnostics
}

func validateString(v validator.String, p path.Path, val types.String) diag.Diagnostics {
	var resp validator.StringResponse
	v.ValidateString(context.Background(), validator.StringRequest{Path: p, ConfigValue: val}, &resp)
	return resp.Diagnostics
}

// oneError checks diags is exactly one error, on p, with this summary and
// detail.
func oneError(t *testing.T, diags diag.Diagnostics, p path.Path, summary, detail string) {
	t.Helper()
	if len(diags) != 1 || diags[0].Severity() != diag.SeverityError {
		t.Fatalf("want one error, got %v", diags)
	}
	d := diags[0]
	if d.Summary() != summary {
		t.Errorf("summary %q, want %q", d.Summary(), summary)
	}
	if d.Detail() != detail {
		t.Errorf("detail\n %q\nwant\n %q", d.Detail(), detail)
	}
	wp, ok := d.(diag.DiagnosticWithPath)
	if !ok || !wp.Path().Equal(p) {
		t.Errorf("diagnostic not on %s: %v", p, d)
	}
}

// A stock validator's refusal is replaced: the summary names the problem,
// the detail says the attribute, its value and the stock rule, then why and
// what to do; it stays on the attribute.
func TestExplainedValidators(t *testing.T) {
	rb := path.Root("rebalance")
	oneError(t, validateInt64(explainInt64(int64validator.AtLeast(1), testExplanation), path.Root("broker_count"), types.Int64Value(0)),
		path.Root("broker_count"), "Widget count out of range",
		"broker_count is 0, but it must be at least 1. Widgets come in pairs. Set it to 2.")
	// The framework's %f bounds read as a user writes them.
	oneError(t, validateFloat64(explainFloat64(float64validator.Between(0.1, 99), testExplanation), rb.AtName("min_free_disk_percent"), types.Float64Value(150)),
		rb.AtName("min_free_disk_percent"), "Widget count out of range",
		"rebalance.min_free_disk_percent is 150, but it must be between 0.1 and 99. Widgets come in pairs. Set it to 2.")
	oneError(t, validateString(explainString(stringvalidator.RegexMatches(topicNamePattern, "may contain only ASCII letters"), testExplanation), path.Root("name"), types.StringValue("orders/eu")),
		path.Root("name"), "Widget count out of range",
		`name is "orders/eu", but it may contain only ASCII letters. Widgets come in pairs. Set it to 2.`)
	oneError(t, validateString(explainString(stringvalidator.LengthBetween(1, 3), testExplanation), path.Root("name"), types.StringValue("abcd")),
		path.Root("name"), "Widget count out of range",
		`name is "abcd", but its length must be between 1 and 3. Widgets come in pairs. Set it to 2.`)
	// An element of a set: the attribute is named as written, the value is
	// the element.
	elem := path.Root("remove_broker_ids").AtSetValue(types.Int64Value(-1))
	oneError(t, validateInt64(explainInt64(int64validator.AtLeast(0), testExplanation), elem, types.Int64Value(-1)),
		elem, "Widget count out of range",
		"remove_broker_ids contains -1, but it must be at least 0. Widgets come in pairs. Set it to 2.")

	// A valid, null or unknown value passes.
	v := explainInt64(int64validator.AtLeast(1), testExplanation)
	for _, val := range []types.Int64{types.Int64Value(1), types.Int64Null(), types.Int64Unknown()} {
		if d := validateInt64(v, path.Root("x"), val); len(d) != 0 {
			t.Errorf("%v: %v", val, d)
		}
	}
	// The stock Description stays, so docs and language servers see the
	// same rule.
	if got, want := v.Description(context.Background()), int64validator.AtLeast(1).Description(context.Background()); got != want {
		t.Errorf("Description %q, want the stock %q", got, want)
	}
}

// A warning of the wrapped validator passes as it is: only refusals are
// explained.
func TestExplainedValidatorKeepsWarnings(t *testing.T) {
	var in diag.Diagnostics
	in.AddAttributeWarning(path.Root("x"), "Deprecated", "Use y.")
	out := testExplanation.explain("value must be at least 1", path.Root("x"), "0", in)
	if len(out) != 1 || out[0].Severity() != diag.SeverityWarning || out[0].Summary() != "Deprecated" {
		t.Errorf("got %v", out)
	}
}

// The messages of the mistakes a user makes most, whole, as they read:
// what, why, what to do, on the attribute.
func TestExplainedMessages(t *testing.T) {
	rb := path.Root("rebalance")
	expire := path.Root("operation_lease").AtName("expire_after")
	for _, tc := range []struct {
		name  string
		diags diag.Diagnostics
		p     path.Path
		want  []string // summary, then phrases of the detail in order
	}{
		{"broker_count = 0", validateInt64(brokerCountValidators()[0], path.Root("broker_count"), types.Int64Value(0)), path.Root("broker_count"),
			[]string{"Fewer than one broker", "broker_count is 0, but it must be at least 1.", "would hold no topic", "Set broker_count to 1 or more"}},
		{"throttle = 100", validateInt64(throttleValidators()[0], path.Root("throttle"), types.Int64Value(100)), path.Root("throttle"),
			[]string{"Throttle below 1 KiB/s", "throttle is 100, but it must be at least 1024.", "more than 12 days", "in bytes per second, for example 10485760"}},
		{"max_moves_per_step = 0", validateInt64(moveLimitValidators()[0], rb.AtName("max_moves_per_step"), types.Int64Value(0)), rb.AtName("max_moves_per_step"),
			[]string{"Move limit below 1", "rebalance.max_moves_per_step is 0, but it must be at least 1.", "could never finish", "Set it to 1 or more"}},
		{"min_free_disk_percent = 150", validateFloat64(freeDiskValidators()[0], rb.AtName("min_free_disk_percent"), types.Float64Value(150)), rb.AtName("min_free_disk_percent"),
			[]string{"Free disk share out of range", "rebalance.min_free_disk_percent is 150, but it must be between 0 and 99.", "no replica could move", "for example 10 for 10%"}},
		{"name = orders/eu", validateString(topicNameValidators()[1], path.Root("name"), types.StringValue("orders/eu")), path.Root("name"),
			[]string{"Character not allowed in a topic name", `name is "orders/eu", but it may contain only ASCII letters, digits, '.', '_' and '-'.`, "Kafka refuses", "orders.eu"}},
		{"name = ..", validateString(topicNameValidators()[2], path.Root("name"), types.StringValue("..")), path.Root("name"),
			[]string{"Topic name not allowed", `name is "..", but it must be none of`, "Choose a name"}},
		{"expire_after = 1s", validateString(durationValidators(executor.MinLeaseExpireAfter, executor.MaxLeaseExpireAfter, explainLeaseExpireAfter)[1], expire, types.StringValue("1s")), expire,
			[]string{"Lease expiry out of range", `operation_lease.expire_after is "1s", but it must be between 3s and 5m.`, "heartbeats five times", "leave it out for the default 2m"}},
		{"broker_start_time = 500ms", validateString(brokerStartTimeValidators()[1], path.Root("scaling").AtName("broker_start_time"), types.StringValue("500ms")), path.Root("scaling").AtName("broker_start_time"),
			[]string{"broker_start_time out of range", `scaling.broker_start_time is "500ms", but it must be between 1s and 24h.`, "no platform starts a broker", "for example \"4m\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.diags) != 1 {
				t.Fatalf("want one error, got %v", tc.diags)
			}
			d := tc.diags[0]
			if d.Summary() != tc.want[0] {
				t.Errorf("summary %q, want %q", d.Summary(), tc.want[0])
			}
			rest := d.Detail()
			for _, phrase := range tc.want[1:] {
				i := strings.Index(rest, phrase)
				if i < 0 {
					t.Fatalf("detail %q lacks %q (in order)", d.Detail(), phrase)
				}
				rest = rest[i+len(phrase):]
			}
			if wp, ok := d.(diag.DiagnosticWithPath); !ok || !wp.Path().Equal(tc.p) {
				t.Errorf("not on %s: %v", tc.p, d)
			}
		})
	}
	// A value that is no duration at all is the syntax check's, with its
	// own message, not the range's why.
	ds := durationValidators(time.Second, time.Hour, explainRequestTimeout)
	if d := validateString(ds[1], path.Root("request_timeout"), types.StringValue("soon")); len(d) != 0 {
		t.Errorf("the range check reported an unparsable value: %v", d)
	}
	if d := validateString(ds[0], path.Root("request_timeout"), types.StringValue("soon")); len(d) != 1 || d[0].Summary() != "Invalid duration" {
		t.Errorf("syntax check: %v", d)
	}
}
