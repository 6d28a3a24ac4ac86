# The demo's configuration (`make demo`): it adopts the local cluster that
# `kafkascale-local up` started, then scales it through the cluster's HTTP
# scaling API while kafkascale moves the data onto the new brokers.
terraform {
  required_providers {
    kafkascale = {
      source = "kafkascale/kafkascale"
    }
  }
}

variable "bootstrap_servers" {
  type        = list(string)
  description = "The local cluster's bootstrap servers, as `kafkascale-local status --bootstrap` prints them."
}

variable "broker_count" {
  type    = number
  default = 3
}

variable "scaling_api" {
  type    = string
  default = "http://127.0.0.1:7070"
}

provider "kafkascale" {
  bootstrap_servers = var.bootstrap_servers
}

resource "kafkascale_cluster" "local" {
  broker_count = var.broker_count

  scaling {
    http {
      endpoint   = var.scaling_api
      cluster_id = "local"
    }
  }

  rebalance {
    initial_throttle     = 31457280 # 30 MiB/s per broker
    max_moves_per_step   = 10
    max_moves_per_broker = 4
    awareness {
      dimensions = ["rack"]
    }
  }
}

# Read after the cluster resource, so it shows the result of the apply.
data "kafkascale_cluster" "after" {
  depends_on = [kafkascale_cluster.local]
}

output "planned" {
  value = "${kafkascale_cluster.local.planned_moves} replica moves, ${floor(kafkascale_cluster.local.planned_bytes / 1048576)} MiB, estimated ${kafkascale_cluster.local.estimated_duration}"
}

output "brokers" {
  value = [
    for b in data.kafkascale_cluster.after.brokers :
    format("broker %d  rack=%s  replicas=%-3d preferred_leaders=%-3d MiB=%d",
    b.id, b.rack, b.partition_count, b.preferred_leader_count, floor(b.bytes_on_disk / 1048576))
  ]
}
