# What would scaling to 8 brokers do, right now? Nothing changes on the cluster.
data "kafkascale_rebalance_plan" "eight" {
  broker_count          = 8
  throttle              = 52428800
  min_free_disk_percent = 20
}

output "preview" {
  value = {
    moves       = data.kafkascale_rebalance_plan.eight.planned_moves
    lower_bound = data.kafkascale_rebalance_plan.eight.lower_bound
    bytes       = data.kafkascale_rebalance_plan.eight.planned_bytes
    duration    = data.kafkascale_rebalance_plan.eight.estimated_duration
    new_brokers = data.kafkascale_rebalance_plan.eight.add_brokers
  }
}

# On 5 brokers, what would removing dead broker 4 do? The same choice and plan as
# kafkascale_cluster with remove_broker_ids = [4]; warnings say how many
# under-replicated partitions it heals.
data "kafkascale_rebalance_plan" "without_4" {
  broker_count      = 4
  remove_broker_ids = [4]
}

output "heal" {
  value = {
    leaving  = data.kafkascale_rebalance_plan.without_4.leaving_brokers
    moves    = data.kafkascale_rebalance_plan.without_4.planned_moves
    warnings = data.kafkascale_rebalance_plan.without_4.warnings
  }
}
