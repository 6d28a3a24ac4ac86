package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func timeoutsOf(update string) timeouts.Value {
	at := map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType}
	vals := map[string]attr.Value{"create": types.StringNull(), "update": types.StringNull(), "delete": types.StringNull()}
	if update != "" {
		vals["update"] = types.StringValue(update)
	}
	return timeouts.Value{Object: types.ObjectValueMust(at, vals)}
}

// max_apply_duration must end an apply before the timeout does; the plan
// warns, on the attribute, when the timeout (6h by default) would win.
func TestMaxApplyDurationAgainstTimeouts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		budget, update string
		warn           string
	}{
		{"90m", "2h", ""},
		{"2h", "2h", "max_apply_duration is 2h0m0s but timeouts.update is 2h0m0s"},
		{"3h", "", ""},
		{"7h", "", "timeouts.create is 6h0m0s"},
	} {
		var diags diag.Diagnostics
		validateMaxApplyDuration(ctx, types.StringValue(tc.budget), timeoutsOf(tc.update), &diags)
		switch {
		case tc.warn == "" && len(diags) > 0:
			t.Errorf("%s against update %q: unexpected %v", tc.budget, tc.update, diags)
		case tc.warn != "" && (diags.WarningsCount() != 1 || !strings.Contains(diags[0].Detail(), tc.warn)):
			t.Errorf("%s against update %q: got %v, want one warning saying %q", tc.budget, tc.update, diags, tc.warn)
		}
	}
}
