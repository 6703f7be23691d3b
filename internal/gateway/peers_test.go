package gateway

import "testing"

// TestInfoClientID: the client id is read from the server's INFO line
// only.
func TestInfoClientID(t *testing.T) {
	for line, want := range map[string]uint64{
		`INFO {"server_id":"x","client_id":42,"max_payload":1048576}`: 42,
		`INFO {"server_id":"x"}`:  0,
		`PING`:                    0,
		`INFO not json`:           0,
		`INFO {"client_id":"42"}`: 0,
		`INFO {"client_id":-1}`:   0,
	} {
		if got := infoClientID(line); got != want {
			t.Errorf("%q: %d, want %d", line, got, want)
		}
	}
}
