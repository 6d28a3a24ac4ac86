# Import a topic by its name.
terraform import kafkascale_topic.orders orders
