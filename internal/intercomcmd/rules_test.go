package intercomcmd

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func TestHookLike(t *testing.T) {
	rewake := &CLI{}
	rewake.Wait.Rewake = true
	for _, tc := range []struct {
		command string
		c       *CLI
		want    bool
	}{
		{"hook <harness> <event>", &CLI{}, true},
		{"wait", rewake, true},
		{"wait", &CLI{}, false},
		{"send <to> <message>", rewake, false},
		{"hooks", &CLI{}, false},
	} {
		if got := hookLike(tc.command, tc.c); got != tc.want {
			t.Errorf("hookLike(%q, rewake %v) = %v, want %v", tc.command, tc.c.Wait.Rewake, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"worker":      "worker",
		"my planner":  "'my planner'",
		"it's":        `"it's"`,
		"$(rm -rf ~)": "'$(rm -rf ~)'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestAskReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{intercom.ErrPeerBusy, "peer_busy"},
		{fmt.Errorf("ask: %w", intercom.ErrAskTimeout), "timeout"},
		{intercom.ErrPeerDisconnected, "peer_disconnected"},
		{intercom.ErrAskerDisconnected, "asker_disconnected"},
		{intercom.ErrPeerOffline, "peer_offline"},
		{intercom.ErrAskBusy, "ask_in_progress"},
		{errors.New("something else"), ""},
		{nil, ""},
	} {
		if got := askReason(tc.err); got != tc.want {
			t.Errorf("askReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestSendRequestDeliveryFlags(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		cmd                       SendCmd
		delivery, queueMode       string
		deliverySet, expectsReply bool
		usage                     string // a usage error containing this
	}{
		{name: "default", cmd: SendCmd{}, delivery: ""},
		{name: "steer", cmd: SendCmd{Delivery: "steer"}, delivery: "steer", deliverySet: true},
		{name: "queue-mode implies queue", cmd: SendCmd{QueueMode: "replace", Thread: "build"}, delivery: "queue", queueMode: "replace"},
		{name: "stack travels as empty", cmd: SendCmd{Delivery: "queue", QueueMode: "stack"}, delivery: "queue", deliverySet: true},
		{name: "request reply", cmd: SendCmd{Request: true}, expectsReply: true},
		{name: "request reply on a reply", cmd: SendCmd{Request: true, ReplyTo: "m1"}, expectsReply: false},
		{name: "mode needs queue", cmd: SendCmd{Delivery: "steer", QueueMode: "replace", Thread: "t"}, usage: "--queue-mode replace requires --delivery queue, not steer"},
		{name: "replace needs thread", cmd: SendCmd{QueueMode: "replace"}, usage: "--queue-mode replace requires --thread"},
		{name: "thread needs replace", cmd: SendCmd{Thread: "t"}, usage: "--thread is only valid with --queue-mode replace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.cmd
			s.To, s.Message = "worker", []string{"hello", "there"}
			req, err := s.request(&env{g: &Globals{}})
			if tc.usage != "" {
				var u kongrun.UsageError
				if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.usage) {
					t.Fatalf("request() error %v, want a usage error with %q", err, tc.usage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.To != "worker" || req.Text != "hello there" || req.Delivery != tc.delivery || req.QueueMode != tc.queueMode ||
				req.DeliverySet != tc.deliverySet || req.ExpectsReply != tc.expectsReply {
				t.Fatalf("request() = %+v", req)
			}
		})
	}
}

func TestCheckMessage(t *testing.T) {
	for _, tc := range []struct {
		text string
		att  []wire.Attachment
		ok   bool
	}{
		{"hello", nil, true},
		{"", []wire.Attachment{{Type: "snippet", Name: "a", Content: "x"}}, true},
		{"   ", nil, false},
		{"bell\a", nil, false},
	} {
		err := checkMessage(tc.text, tc.att)
		if (err == nil) != tc.ok {
			t.Errorf("checkMessage(%q, %d attachments) = %v, want ok %v", tc.text, len(tc.att), err, tc.ok)
		}
	}
}
