resource "kafkascale_cluster" "main" {
  broker_count = 5

  # Optional: which brokers leave. Without it a scale-in removes fenced or
  # offline brokers first, then keeps racks (every awareness dimension) as
  # even as the count allows, then moves the fewest bytes, then removes the
  # highest ids. `leaving_brokers` shows the choice at plan time.
  #
  # Broker 4 died for good: remove it (broker_count one lower) ...
  # remove_broker_ids = [4]
  # ... or replace it, keeping broker_count: a new broker takes exactly its
  # replicas, and broker 4 is unregistered. Either heals its partitions.

  # Exactly one scaling method.
  scaling {
    http {
      endpoint   = "http://127.0.0.1:7070"
      cluster_id = "local"
      # token_wo = var.scaling_token   # write-only, never in the state; or KAFKASCALE_SCALING_TOKEN
    }
    # command {
    #   scale_up   = ["kubectl", "scale", "statefulset/kafka", "--replicas={broker_count}"]
    #   scale_down = ["./remove-brokers.sh", "{remove_broker_ids}"]
    # }
    # external {}
  }

  rebalance {
    initial_throttle      = 20971520  # 20 MiB/s per broker
    min_throttle          = 5242880   # 5 MiB/s
    max_throttle          = 104857600 # 100 MiB/s
    max_moves_per_step    = 10
    max_moves_per_broker  = 2
    min_free_disk_percent = 20
    max_disk_skew_percent = 10
    adjust_interval       = "30s"

    awareness {
      separator  = "/"
      dimensions = ["zone", "rack"] # broker.rack = "eu-1a/r3"
    }

    metrics {
      prometheus_url = "http://127.0.0.1:9090"
      thresholds {
        min_handler_idle = 0.3
      }
    }
  }

  timeouts {
    update = "6h"
  }
}

output "leaving" {
  value = kafkascale_cluster.main.leaving_brokers
}

output "scale_cost" {
  value = "${kafkascale_cluster.main.planned_moves} moves, ${kafkascale_cluster.main.planned_bytes} bytes, ~${kafkascale_cluster.main.estimated_duration}"
}
