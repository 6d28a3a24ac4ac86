# Import with the Kafka cluster id (the provider's bootstrap_servers must reach that cluster).
terraform import kafkascale_cluster.main q-mmp8ZmeAcCHdoZzgDBzg
