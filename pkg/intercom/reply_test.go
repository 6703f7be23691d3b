package intercom

import (
	"errors"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

func TestPickAsk(t *testing.T) {
	carol := wire.PendingAsk{AskID: "m-carol-1", From: wire.Peer{ID: "0a1b2c3d4e5f", Name: "Carol"}, FromTarget: "carol"}
	dave := wire.PendingAsk{AskID: "m-dave-1", From: wire.Peer{ID: "0a1b9999aaaa", Name: "dave"}, FromTarget: "dave@beta"}
	both := []wire.PendingAsk{carol, dave}
	for _, tc := range []struct {
		asks   []wire.PendingAsk
		target string
		want   string // ask id; "none" for ErrNoAsk, "many" for ambiguous
	}{
		{[]wire.PendingAsk{carol}, "", "m-carol-1"},
		{both, "", "many"},
		{nil, "", "none"},
		{both, "m-dave-1", "m-dave-1"},      // ask id
		{both, "CAROL", "m-carol-1"},        // name, any case
		{both, "dave@beta", "m-dave-1"},     // display target
		{both, "0a1b2c3d", "m-carol-1"},     // id prefix of 8
		{both, "0a1b", "none"},              // shorter than MinPrefix
		{both, "0a1b2c3d4e5f", "m-carol-1"}, // whole id
		{both, "erin", "none"},
	} {
		got, err := PickAsk(tc.asks, tc.target)
		var many *AmbiguousAskError
		switch {
		case tc.want == "none":
			if !errors.Is(err, ErrNoAsk) {
				t.Errorf("PickAsk(%d asks, %q): %v %v, want ErrNoAsk", len(tc.asks), tc.target, got.AskID, err)
			}
		case tc.want == "many":
			if !errors.As(err, &many) || len(many.Asks) != 2 || !strings.Contains(err.Error(), "m-carol-1 (from Carol), m-dave-1 (from dave)") {
				t.Errorf("PickAsk(%d asks, %q): %v, want both as candidates", len(tc.asks), tc.target, err)
			}
		case err != nil || got.AskID != tc.want:
			t.Errorf("PickAsk(%d asks, %q) = %q, %v; want %q", len(tc.asks), tc.target, got.AskID, err, tc.want)
		}
	}
}
