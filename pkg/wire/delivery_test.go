package wire

import (
	"strings"
	"testing"
)

func TestParseDelivery(t *testing.T) {
	f := DeliveryFields{Delivery: "--delivery", QueueMode: "--queue-mode", Thread: "--thread"}
	for _, tc := range []struct {
		name                            string
		delivery, queueMode, thread     string
		ask                             bool
		wantDelivery, wantMode, wantErr string
	}{
		{name: "default", wantDelivery: "", wantMode: ""},
		{name: "steer", delivery: "steer", wantDelivery: "steer"},
		{name: "passive send", delivery: "passive", wantDelivery: "passive"},
		{name: "passive ask", delivery: "passive", ask: true, wantErr: "passive delivery cannot be used for an ask"},
		{name: "queue stack travels as empty", delivery: "queue", queueMode: "stack", wantDelivery: "queue", wantMode: ""},
		{name: "queue replace", delivery: "queue", queueMode: "replace", thread: "build", wantDelivery: "queue", wantMode: "replace"},
		{name: "unknown delivery", delivery: "shout", wantErr: `invalid --delivery "shout": want steer, queue or passive`},
		{name: "unknown mode", delivery: "queue", queueMode: "lifo", wantErr: `invalid --queue-mode "lifo": want stack or replace`},
		{name: "mode without delivery", queueMode: "replace", thread: "t", wantErr: "--queue-mode replace requires --delivery queue"},
		{name: "mode with steer", delivery: "steer", queueMode: "stack", wantErr: "--queue-mode stack requires --delivery queue, not steer"},
		{name: "replace without thread", delivery: "queue", queueMode: "replace", wantErr: "--queue-mode replace requires --thread"},
		{name: "thread without replace", delivery: "queue", thread: "t", wantErr: "--thread is only valid with --queue-mode replace"},
		{name: "thread with stack", delivery: "queue", queueMode: "stack", thread: "t", wantErr: "--thread is only valid with --queue-mode replace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, m, err := ParseDelivery(tc.delivery, tc.queueMode, tc.thread, tc.ask, f)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseDelivery = %q, %q, %v; want an error with %q", d, m, err, tc.wantErr)
				}
				if e, ok := err.(*Error); !ok || e.Code != CodeBadRequest {
					t.Fatalf("error %#v is not a bad request", err)
				}
				return
			}
			if err != nil || d != tc.wantDelivery || m != tc.wantMode {
				t.Fatalf("ParseDelivery = %q, %q, %v; want %q, %q", d, m, err, tc.wantDelivery, tc.wantMode)
			}
		})
	}
}
