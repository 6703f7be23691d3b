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

// Topics reads the current state of one topic ("" for all).
func (c *Client) Topics(ctx context.Context, topic string) ([]wire.TopicInfo, error) {
	res, err := call[wire.TopicsReply](ctx, c, wire.SubjTopics, wire.TopicsRequest{Topic: topic})
	if err != nil {
		return nil, err
	}
	return res.Topics, nil
}
