// Package validators holds the attribute validators kafkascale's schemas
// share. Each returns early on null or unknown values and reports on the
// attribute's own path.
package validators

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.String = hostPortValidator{}

type hostPortValidator struct{}

// HostPort checks that a string is `host:port` with a port in 1..65535.
func HostPort() validator.String { return hostPortValidator{} }

func (hostPortValidator) Description(context.Context) string {
	return "value must be host:port with a port between 1 and 65535"
}

func (v hostPortValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v hostPortValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	host, port, err := net.SplitHostPort(s)
	if err == nil && host == "" {
		err = fmt.Errorf("the host is empty")
	}
	if err == nil {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 {
			err = fmt.Errorf("port %q is not between 1 and 65535", port)
		}
	}
	if err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid server address",
			fmt.Sprintf("%q is not host:port (%v). Write for example \"127.0.0.1:9092\".", s, err))
	}
}

// QuoteList renders allowed values for an attribute description, so the
// docs and the OneOf validator are fed by the same list.
func QuoteList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "`" + v + "`"
	}
	return strings.Join(q, ", ")
}
