# Terraform 1.5 and later: an import block, reviewed in the plan like any
# other change. The id is the topic's name.
import {
  to = kafkascale_topic.orders
  id = "orders"
}
