package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// DecodeBoundaryReply gives what encoding/json gives, whichever way it
// reads the reply.
func TestDecodeBoundaryReplyIsJSONUnmarshal(t *testing.T) {
	for _, data := range []string{
		`{"result":{"held":true}}`,
		`{"result":{"held":false}}`,
		`{"result":{}}`,
		`{"result":{"held":true,"state_error":"bad \"state\""}}`,
		`{"result":{"held":true,"messages":[{"id":"m1","text":"hi","from":{"id":"abcdefgh","name":"a"}}]}}`,
		`{"result":{"held":"yes"}}`,
		`{"result":{"held":true,"later":1}}`,
		`{"error":{"code":"not_found","message":"no"}}`,
		`{"result":null}`,
		`not json`,
	} {
		got, gerr := DecodeBoundaryReply([]byte(data))
		var want Reply[BoundaryReply]
		werr := json.Unmarshal([]byte(data), &want)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, %v; encoding/json %+v, %v", data, got, gerr, want, werr)
		}
	}
	if _, ok := decodeBoundaryFast([]byte(`{"result":{"held":true}}`)); !ok {
		t.Errorf("a reply without messages was not read without reflection")
	}
}

// A boundary request's AppendJSON writes what json.Marshal writes.
func TestBoundaryRequestAppendJSON(t *testing.T) {
	for _, r := range []BoundaryRequest{
		{},
		{SessionID: "cc-abc", Status: "tool:Bash", Fetch: true},
		{SessionID: "cc-abc", Fetch: true},
		{SessionID: "s\"<&>\u2028\xff", Status: "idle"},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.AppendJSON(nil); string(got) != string(want) {
			t.Errorf("AppendJSON(%+v) = %s, json.Marshal %s", r, got, want)
		}
	}
}
