package provider

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// explanation is what a stock validator's refusal leaves out. The stock
// message says only what is wrong ("Attribute broker_count value must be at
// least 1, got: 0"); an explained validator replaces it with a summary that
// names the problem, the value and the rule, then why the value cannot work
// and what to do.
type explanation struct {
	summary string
	why     string
	fix     string
}

// explainInt64, explainFloat64 and explainString wrap a stock validator:
// it decides, the explanation speaks. Its Description, and so the rule the
// message quotes, is the stock validator's own, so the bounds are written
// once.
func explainInt64(v validator.Int64, e explanation) validator.Int64 {
	return explainedInt64{v, e}
}

func explainFloat64(v validator.Float64, e explanation) validator.Float64 {
	return explainedFloat64{v, e}
}

func explainString(v validator.String, e explanation) validator.String {
	return explainedString{v, e}
}

type explainedInt64 struct {
	validator.Int64
	e explanation
}

func (x explainedInt64) ValidateInt64(ctx context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	var inner validator.Int64Response
	x.Int64.ValidateInt64(ctx, req, &inner)
	resp.Diagnostics.Append(x.e.explain(x.Description(ctx), req.Path, strconv.FormatInt(req.ConfigValue.ValueInt64(), 10), inner.Diagnostics)...)
}

type explainedFloat64 struct {
	validator.Float64
	e explanation
}

func (x explainedFloat64) ValidateFloat64(ctx context.Context, req validator.Float64Request, resp *validator.Float64Response) {
	var inner validator.Float64Response
	x.Float64.ValidateFloat64(ctx, req, &inner)
	resp.Diagnostics.Append(x.e.explain(x.Description(ctx), req.Path, strconv.FormatFloat(req.ConfigValue.ValueFloat64(), 'f', -1, 64), inner.Diagnostics)...)
}

type explainedString struct {
	validator.String
	e explanation
}

func (x explainedString) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	var inner validator.StringResponse
	x.String.ValidateString(ctx, req, &inner)
	resp.Diagnostics.Append(x.e.explain(x.Description(ctx), req.Path, strconv.Quote(req.ConfigValue.ValueString()), inner.Diagnostics)...)
}

// explain is the one rule: every error the stock validator raised becomes
// "<attribute> is <value>, but <rule>. <why> <fix>" under the explanation's
// summary, on the same attribute; anything else passes as it is.
func (e explanation) explain(rule string, p path.Path, value string, diags diag.Diagnostics) diag.Diagnostics {
	var out diag.Diagnostics
	for _, d := range diags {
		if d.Severity() != diag.SeverityError {
			out.Append(d)
			continue
		}
		name, element := attributeName(p)
		verb := "is"
		if element {
			verb = "contains"
		}
		out.AddAttributeError(p, e.summary, fmt.Sprintf("%s %s %s, but %s. %s %s", name, verb, value, ruleText(rule), e.why, e.fix))
	}
	return out
}

// attributeName is p as the configuration writes it ("rebalance.throttle"),
// without the element steps the framework adds inside a list or set;
// element tells whether there were any.
func attributeName(p path.Path) (string, bool) {
	var names []string
	element := false
	for _, s := range p.Steps() {
		if a, ok := s.(path.PathStepAttributeName); ok {
			names = append(names, string(a))
		} else {
			element = true
		}
	}
	return strings.Join(names, "."), element
}

var fixedFloat = regexp.MustCompile(`\d+\.\d+`)

// ruleText turns a stock Description ("value must be between 0.000000 and
// 99.000000") into the clause of a sentence ("it must be between 0 and 99").
// A Description with no known subject ("may contain only …", a message
// given to RegexMatches) gets "it".
func ruleText(description string) string {
	rule := fixedFloat.ReplaceAllStringFunc(description, func(s string) string {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return s
		}
		return strconv.FormatFloat(f, 'f', -1, 64)
	})
	for _, subject := range []struct{ stock, ours string }{{"value ", "it "}, {"string length ", "its length "}} {
		if r, ok := strings.CutPrefix(rule, subject.stock); ok {
			return subject.ours + r
		}
	}
	return "it " + rule
}
