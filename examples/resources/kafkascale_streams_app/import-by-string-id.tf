# Terraform 1.5 and later: an import block, reviewed in the plan like any
# other change. The id is the application id; the source topics are read
# from the app's group.
import {
  to = kafkascale_streams_app.billing
  id = "billing"
}
