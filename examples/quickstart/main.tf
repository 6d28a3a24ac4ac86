# The demo's configuration (`make demo`): it reads the local cluster that
# `kafkascale-local up` started and prints its brokers.
terraform {
  required_providers {
    kafkascale = {
      source = "kafkascale/kafkascale"
    }
  }
}

variable "bootstrap_servers" {
  type        = list(string)
  description = "The local cluster's bootstrap servers, as `kafkascale-local up` prints them."
}

provider "kafkascale" {
  bootstrap_servers = var.bootstrap_servers
}

data "kafkascale_cluster" "local" {}

output "cluster_id" {
  value = data.kafkascale_cluster.local.cluster_id
}

output "controller_id" {
  value = data.kafkascale_cluster.local.controller_id
}

output "brokers" {
  value = [
    for b in data.kafkascale_cluster.local.brokers :
    format("broker %d  %s:%d  rack=%-2s replicas=%-3d preferred_leaders=%-3d bytes=%d",
    b.id, b.host, b.port, b.rack, b.partition_count, b.preferred_leader_count, b.bytes_on_disk)
  ]
}
