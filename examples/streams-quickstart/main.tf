# The demo's Streams part (`make demo`): the four topics of the fixture app
# in test/streams-app, and the app itself, grown from 4 to 8 partitions while
# it runs. The plan shows the ordered steps before anything grows.
terraform {
  required_providers {
    kafkascale = {
      source = "kafkascale/kafkascale"
    }
  }
}

variable "bootstrap_servers" {
  type = list(string)
}

variable "partitions" {
  type    = number
  default = 4
}

# The app must have run once (its group and internal topics exist) before
# kafkascale can adopt it, so the demo first creates the topics only.
variable "manage_app" {
  type    = bool
  default = false
}

provider "kafkascale" {
  bootstrap_servers = var.bootstrap_servers
}

resource "kafkascale_topic" "app" {
  for_each           = toset(["orders", "customers", "enriched", "counts"])
  name               = each.key
  partitions         = 4
  replication_factor = 3
  config             = { "min.insync.replicas" = "2" }

  # The Streams app owns the partition count: kafkascale_topic refuses to grow
  # a topic a Streams app reads (it would stop the app), so the count changes
  # only on kafkascale_streams_app.shop, which grows the sources, the internal
  # topics and the sinks in an order the app survives.
  lifecycle {
    ignore_changes = [partitions]
  }
}

resource "kafkascale_streams_app" "shop" {
  count = var.manage_app ? 1 : 0

  application_id      = "shop"
  source_topics       = [kafkascale_topic.app["orders"].name, kafkascale_topic.app["customers"].name]
  sink_topics         = [kafkascale_topic.app["enriched"].name, kafkascale_topic.app["counts"].name]
  partitions          = var.partitions
  static_partitioning = true # the app keeps every key in its home partition
  quiet_period        = "5s"
}

output "expansion" {
  value = var.manage_app ? {
    protocol           = kafkascale_streams_app.shop[0].protocol
    partitions         = kafkascale_streams_app.shop[0].partitions
    internal_topics    = kafkascale_streams_app.shop[0].internal_topics
    settled_partitions = kafkascale_streams_app.shop[0].settled_partitions
  } : null
}
