package provider

import (
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// executor is the one place the provider wires the executor's ports: the
// cluster, placement, topics and the operation store of this provider's
// Kafka client, the run's operation lease and the tflog logger. scaler and
// advisor are the cluster resource's own (nil elsewhere).
func (d *providerData) executor(s executor.Settings, scaler executor.Scaler, advisor executor.RateAdvisor) *executor.Executor {
	port := d.kafka.Port()
	return executor.New(executor.Deps{
		Kafka:   port,
		Scaler:  scaler,
		Placer:  port,
		Topics:  port,
		Store:   d.kafka.Operations(),
		Advisor: advisor,
		Log:     tflogLogger{},
		Lease:   d.lease,
	}, s)
}
