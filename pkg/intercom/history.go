package intercom

import (
	"context"
	"time"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// HistoryPage reads the broker's kept messages and topic records after
// cursor after ("" for the oldest), at most limit (0: a full page).
func (c *Client) HistoryPage(ctx context.Context, after string, limit int) (wire.HistoryReply, error) {
	res, err := call[wire.HistoryReply](ctx, c, wire.SubjHistory, wire.HistoryRequest{After: after, Limit: limit})
	if err != nil {
		return wire.HistoryReply{}, err
	}
	return *res, nil
}

// PurgeHistory removes kept entries involving sessionID ("" for all), kept
// before before (zero for all); it returns how many went.
func (c *Client) PurgeHistory(ctx context.Context, sessionID string, before time.Time) (int, error) {
	res, err := call[wire.HistoryPurgeReply](ctx, c, wire.SubjHistoryPurge, wire.HistoryPurgeRequest{SessionID: sessionID, Before: before})
	if err != nil {
		return 0, err
	}
	return res.Removed, nil
}
