resource "kafkascale_topic" "orders" {
  name               = "orders"
  partitions         = 12
  replication_factor = 3

  # The topic's own configs; keys left out are inherited from the brokers.
  config = {
    "min.insync.replicas" = "2"
    "retention.ms"        = "604800000" # 7 days
  }

  # Every producer keeps a key on the partition it first went to, so growing
  # the topic moves no existing key. Without it, growing a keyed topic shows a
  # warning in the plan.
  static_partitioning = true

  # Replication throttle of a replication_factor change, bytes/s per broker.
  throttle = 20971520 # 20 MiB/s

  timeouts {
    update = "6h"
  }
}
