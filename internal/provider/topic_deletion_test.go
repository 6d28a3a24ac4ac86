package provider_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// A topic holding data under deletion_protection: destroying it and
// renaming it are refused at plan time on the attribute, and the topic
// stays with its data. With the protection off, the plan that deletes it
// warns with the bytes and records it holds.
func TestAccTopicResource_deletionProtection(t *testing.T) {
	testAccParallel(t)
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3})
	servers := c.BootstrapServers()
	rec := &warningRecorder{}
	protected := topicConfig(servers, "guarded", 3, 2, `deletion_protection = true`)
	renamed := topicConfig(servers, "guarded-2", 3, 2, `deletion_protection = true`)
	open := topicConfig(servers, "guarded", 3, 2, `deletion_protection = false`)
	stillThere := func() {
		assertTopicOnEveryBroker(t, c, "guarded", 3, 2)
		assertTopicReadable(t, c, "guarded", 4<<20)
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: rec.factories(),
		CheckDestroy:             checkTopicGone(c, t, "guarded"),
		Steps: []resource.TestStep{
			{
				Config: protected,
				Check: func(*terraform.State) error {
					fillTopic(t, c, "guarded", 4<<20)
					return nil
				},
			},
			{
				Config:      testAccProviderConfig(servers, ""),
				ExpectError: wrapped(`(?s)Topic guarded is protected from deletion.*Destroying the kafkascale_topic would delete topic guarded.*deletion_protection = true refuses`),
			},
			{
				PreConfig:   stillThere,
				Config:      renamed,
				ExpectError: wrapped(`(?s)Topic guarded is protected from deletion.*Renaming the kafkascale_topic would delete topic guarded`),
			},
			{PreConfig: stillThere, Config: open},
			{
				PreConfig:          rec.reset,
				Config:             testAccProviderConfig(servers, ""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				PreConfig: func() {
					if err := rec.expect(`^Topic guarded and its data will be deleted`, `Destroying the kafkascale_topic deletes topic guarded with [1-9]\d* bytes in [1-9]\d* records`); err != nil {
						t.Error(err)
					}
				},
				Config:   open,
				PlanOnly: true,
			},
		},
	})
}
