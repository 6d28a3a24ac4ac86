# A Kafka Streams app that joins orders with customers and counts per
# product. Growing it from 12 to 24 partitions grows its sinks first, then
# its sources together with its internal topics in one request, then waits
# until its group is stable on 24 and calls the endpoint.

# The app's topics. Their partition count belongs to the app's resource
# (kafkascale_topic refuses to grow a topic a Streams app reads), so each
# ignores changes to partitions.
resource "kafkascale_topic" "orders" {
  name               = "orders"
  partitions         = 12
  replication_factor = 3

  lifecycle {
    ignore_changes = [partitions]
  }
}

resource "kafkascale_topic" "customers" {
  name               = "customers"
  partitions         = 12
  replication_factor = 3

  lifecycle {
    ignore_changes = [partitions]
  }
}

resource "kafkascale_topic" "invoices" {
  name               = "invoices"
  partitions         = 12
  replication_factor = 3

  lifecycle {
    ignore_changes = [partitions]
  }
}

resource "kafkascale_streams_app" "billing" {
  application_id = "billing"
  source_topics  = [kafkascale_topic.orders.name, kafkascale_topic.customers.name]
  sink_topics    = [kafkascale_topic.invoices.name]
  partitions     = 24

  # Every producer to the sources, and every repartition step, keeps each
  # existing key in its partition and sends only new keys to the new ones.
  static_partitioning = true

  # Internal topics whose count the topology fixes are found and left
  # alone; the plan shows them in fixed_internal_topics. List one here only
  # when its fixed count happens to equal the sources' count.
  # fixed_internal_topics = ["billing-by-region-repartition", "billing-per-region-changelog"]

  on_expansion_url      = "https://deploy.example.com/hooks/billing-expanded"
  quiet_period          = "30s"
  stabilization_timeout = "15m"

  # Only for an app on the classic rebalance protocol (group.protocol=classic,
  # the client's default): stop every instance, then start the app again.
  quiesce {
    stop  = ["kubectl", "scale", "deployment/billing", "--replicas=0"]
    start = ["kubectl", "scale", "deployment/billing", "--replicas=3"]
  }

  # fraud reads orders too, so orders cannot grow without fraud's internal
  # topics: fraud grows with billing, its topics in the same request, and
  # (on the classic protocol) stopped and started in the same window.
  # Every Streams app that reads a source of the expansion must be declared
  # here, or the plan is refused.
  co_expand {
    application_id   = "fraud"
    source_topics    = [kafkascale_topic.orders.name]
    sink_topics      = ["fraud-alerts"]
    on_expansion_url = "https://deploy.example.com/hooks/fraud-expanded"

    quiesce {
      stop  = ["kubectl", "scale", "deployment/fraud", "--replicas=0"]
      start = ["kubectl", "scale", "deployment/fraud", "--replicas=2"]
    }
  }

  # An app downstream of this one (it reads this app's sink) must grow
  # first: depends_on makes Terraform apply it first.
  depends_on = [kafkascale_streams_app.reporting]
}

# Downstream of billing: it reads billing's sink, invoices.
resource "kafkascale_streams_app" "reporting" {
  application_id      = "reporting"
  source_topics       = [kafkascale_topic.invoices.name]
  partitions          = 24
  static_partitioning = true
}
