package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// timeoutsBlock is the timeouts block of a resource whose apply blocks
// until the cluster is stable, with each default written where users read
// the schema. updates says what an update waits for. A zero del leaves
// delete out: the resource's destroy touches nothing that could take long.
func timeoutsBlock(ctx context.Context, create, update, del time.Duration, updates string) schema.Block {
	return timeouts.Block(ctx, timeouts.Opts{
		Create: true, Update: true, Delete: del > 0,
		CreateDescription: "How long a create may take, as a duration (`30m`, `2h`). Default `" + shortDuration(create) + "`.",
		UpdateDescription: "How long an update may take: " + updates + ". Default `" + shortDuration(update) + "`.",
		DeleteDescription: "How long a destroy may take. Default `" + shortDuration(del) + "`.",
	})
}

// shortDuration writes d as a user writes it: 6h, 10m, 90s.
func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
