# Terraform 1.5 and later: an import block, reviewed in the plan like any
# other change. The id is the Kafka cluster id; the provider's
# bootstrap_servers must reach that cluster.
import {
  to = kafkascale_cluster.main
  id = "q-mmp8ZmeAcCHdoZzgDBzg"
}
