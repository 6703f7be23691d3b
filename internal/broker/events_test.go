package broker

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// eventClient reads the client id of the server's own connect and
// disconnect events, and leaves out the broker's own connections and what
// it cannot read.
func TestEventClient(t *testing.T) {
	enc := func(v any) []byte {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	connect := enc(server.ConnectEventMsg{Client: server.ClientInfo{ID: 42, User: agentUser, Name: "intercom-hook"}})
	disconnect := enc(server.DisconnectEventMsg{Client: server.ClientInfo{ID: 43, User: agentUser}, Reason: "Client Closed"})
	own := enc(server.ConnectEventMsg{Client: server.ClientInfo{ID: 44, User: brokerUser}})
	for _, tc := range []struct {
		name string
		data []byte
		id   uint64
		ok   bool
	}{
		{"connect", connect, 42, true},
		{"disconnect", disconnect, 43, true},
		{"the broker's own", own, 0, false},
		{"not json", []byte("{"), 0, false},
		{"no client", []byte(`{"server":{}}`), 0, false},
		{"id zero", enc(server.ConnectEventMsg{}), 0, false},
	} {
		id, ok := eventClient(tc.data)
		if ok != tc.ok || (ok && id != tc.id) {
			t.Errorf("%s: eventClient = %d, %v; want %d, %v", tc.name, id, ok, tc.id, tc.ok)
		}
	}
}
