package kafka

import (
	"context"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

var _ executor.TopicAdmin = (*Port)(nil)

// AlterTopicConfigs changes the topic's own configs and waits until every
// broker serves them.
func (p *Port) AlterTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string) error {
	defer p.c.Topics().Invalidate(topic)
	if err := p.c.AlterTopicConfigs(ctx, topic, set, del); err != nil {
		return err
	}
	return p.c.AwaitTopicConfigs(ctx, topic, set, del)
}

// AwaitTopicConfigs waits until every broker serves set and none of del.
func (p *Port) AwaitTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string) error {
	return p.c.AwaitTopicConfigs(ctx, topic, set, del)
}

// DeleteTopic deletes the topic and waits until no broker lists it.
func (p *Port) DeleteTopic(ctx context.Context, topic string) error {
	defer p.c.Topics().Invalidate(topic)
	if err := p.c.DeleteTopic(ctx, topic); err != nil {
		return err
	}
	return p.c.AwaitTopicGone(ctx, topic)
}

// AwaitTopicReady waits until every broker shows the topic with its
// partitions and replicas, each with a leader and a full ISR.
func (p *Port) AwaitTopicReady(ctx context.Context, topic string, partitions, rf int) error {
	return p.c.AwaitTopicReady(ctx, topic, partitions, rf)
}
