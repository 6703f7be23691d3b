package intercom

import (
	"context"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// Subscribe subscribes a session to an exact topic. With awaitRelease, an
// explicit release publication wakes it too; blocker and decision always do.
func (c *Client) Subscribe(ctx context.Context, sessionID, topic string, awaitRelease bool) (wire.SubscribeReply, error) {
	res, err := call[wire.SubscribeReply](ctx, c, wire.SubjSubscribe, wire.SubscribeRequest{SessionID: sessionID, Topic: topic, AwaitRelease: awaitRelease})
	if err != nil {
		return wire.SubscribeReply{}, err
	}
	return *res, nil
}

// Unsubscribe removes a subscription.
func (c *Client) Unsubscribe(ctx context.Context, sessionID, topic string) error {
	_, err := call[wire.SubscribeReply](ctx, c, wire.SubjUnsub, wire.SubscribeRequest{SessionID: sessionID, Topic: topic})
	return err
}

// Publish replaces the sender's current record on a topic. It is
// idempotent: without a ClientMsgID it gets a random one, and it is retried
// (with that id) while the broker restarts, so a publication whose reply was
// lost is applied once.
func (c *Client) Publish(ctx context.Context, req wire.PublishRequest) (wire.PublishReply, error) {
	if req.ClientMsgID == "" {
		req.ClientMsgID = randomID()
	}
	res, err := callRetrying[wire.PublishReply](ctx, c, wire.SubjPublish, req)
	if err != nil {
		return wire.PublishReply{}, err
	}
	return *res, nil
}

// maxTopicPages bounds how many pages Topics reads (a page is about 2 MiB).
const maxTopicPages = 512

// Topics reads the current state of one topic ("" for all). The broker
// answers in pages; Topics reads them all and joins a topic that continues
// from one page to the next.
func (c *Client) Topics(ctx context.Context, topic string) ([]wire.TopicInfo, error) {
	var out []wire.TopicInfo
	offset := 0
	for range maxTopicPages {
		res, err := call[wire.TopicsReply](ctx, c, wire.SubjTopics, wire.TopicsRequest{Topic: topic, Offset: offset})
		if err != nil {
			return nil, err
		}
		for _, ti := range res.Topics {
			if n := len(out); n > 0 && out[n-1].Topic == ti.Topic {
				last := &out[n-1]
				last.Records = append(last.Records, ti.Records...)
				last.Subscribers = append(last.Subscribers, ti.Subscribers...)
				last.Resources = append(last.Resources, ti.Resources...)
				continue
			}
			out = append(out, ti)
		}
		if res.NextOffset <= offset {
			break
		}
		offset = res.NextOffset
	}
	if out == nil {
		out = []wire.TopicInfo{}
	}
	return out, nil
}
