data "kafkascale_cluster" "current" {}

output "brokers" {
  value = {
    for b in data.kafkascale_cluster.current.brokers :
    b.id => "${b.host}:${b.port} rack=${b.rack} replicas=${b.partition_count} preferred_leaders=${b.preferred_leader_count} bytes=${b.bytes_on_disk}"
  }
}
