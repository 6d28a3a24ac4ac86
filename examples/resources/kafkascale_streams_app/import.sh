# Import by application id; the source topics are read from the app's group.
terraform import kafkascale_streams_app.billing billing
