provider "kafkascale" {
  bootstrap_servers = ["127.0.0.1:9092"] # or KAFKA_BOOTSTRAP_SERVERS
  request_timeout   = "30s"

  # tls {
  #   ca_cert     = file("ca.pem")      # inline PEM or a path
  #   client_cert = "client.pem"
  #   client_key  = "client-key.pem"
  # }
  # sasl {
  #   mechanism = "SCRAM-SHA-512"
  #   username  = "kafkascale"           # or KAFKA_SASL_USERNAME
  #   password  = var.kafka_password    # or KAFKA_SASL_PASSWORD
  # }

  # One operation at a time per cluster. By default an apply waits for
  # another run's operation; a CI job that must not queue can fail fast.
  operation_lease {
    fail_fast    = false
    expire_after = "2m" # a killed holder's lease is taken over after this
  }
}
