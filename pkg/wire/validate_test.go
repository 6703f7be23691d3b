package wire

import (
	"errors"
	"strings"
	"testing"
)

// wantVerdict fails unless err is nil for want "", or a *Error with code
// whose message contains want.
func wantVerdict(t *testing.T, what string, err error, code, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("%s: got %v, want accepted", what, err)
		}
		return
	}
	var we *Error
	if !errors.As(err, &we) {
		t.Errorf("%s: got %v, want a %s error saying %q", what, err, code, want)
		return
	}
	if we.Code != code || !strings.Contains(we.Message, want) {
		t.Errorf("%s: got %s %q, want %s saying %q", what, we.Code, we.Message, code, want)
	}
}

func TestValidateMessage(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", MaxMessageBytes)
	cases := []struct {
		name, text string
		att        []Attachment
		code, want string
	}{
		{"text", "hello", nil, "", ""},
		{"attachment only", "", []Attachment{{Type: "file", Name: "a.go", Content: "x"}}, "", ""},
		{"blank", " \n", nil, CodeBadRequest, "message is empty"},
		{"control", "bell\a", nil, CodeBadRequest, "contains control character"},
		{"bad type", "x", []Attachment{{Type: "image", Name: "a"}}, CodeBadRequest, "attachment 1: invalid type"},
		{"blank name", "x", []Attachment{{Type: "snippet", Name: " "}}, CodeBadRequest, "attachment 1 name"},
		{"bad language", "x", []Attachment{{Type: "snippet", Name: "n", Language: "go\n"}}, CodeBadRequest, "attachment 1 language"},
		{"at the limit", big, nil, "", ""},
		{"over the limit", big, []Attachment{{Type: "context", Name: "c"}}, CodeTooLarge, "message too large"},
	}
	for _, c := range cases {
		wantVerdict(t, c.name, ValidateMessage(c.text, c.att), c.code, c.want)
	}
}

func TestValidateSendDefaultsAndRefusals(t *testing.T) {
	t.Parallel()
	req := SendRequest{From: "a", To: "b", Text: "x"}
	if err := ValidateSend(&req); err != nil || req.Delivery != DeliverySteer {
		t.Fatalf("plain send: %v, delivery %q; want accepted as steer", err, req.Delivery)
	}
	cases := []struct {
		name string
		req  SendRequest
		want string
	}{
		{"no sender", SendRequest{To: "b", Text: "x"}, "sender session is required"},
		{"no target", SendRequest{From: "a", To: " ", Text: "x"}, "target is required"},
		{"empty", SendRequest{From: "a", To: "b"}, "send: message is empty"},
		{"delivery", SendRequest{From: "a", To: "b", Text: "x", Delivery: "shout"}, "invalid delivery"},
		{"passive ask", SendRequest{From: "a", To: "b", Text: "x", Delivery: DeliveryPassive, ExpectsReply: true}, "passive delivery cannot"},
		{"thread alone", SendRequest{From: "a", To: "b", Text: "x", Thread: "t"}, "thread is only valid"},
		{"replace steer", SendRequest{From: "a", To: "b", Text: "x", QueueMode: "replace", Thread: "t"}, "requires delivery queue"},
		{"replace no thread", SendRequest{From: "a", To: "b", Text: "x", Delivery: DeliveryQueue, QueueMode: "replace"}, "requires a thread"},
		{"replace ask", SendRequest{From: "a", To: "b", Text: "x", Delivery: DeliveryQueue, QueueMode: "replace", Thread: "t", ExpectsReply: true}, "an ask cannot use"},
		{"replace bad thread", SendRequest{From: "a", To: "b", Text: "x", Delivery: DeliveryQueue, QueueMode: "replace", Thread: "t\x01"}, "thread must not contain"},
		{"queue mode", SendRequest{From: "a", To: "b", Text: "x", QueueMode: "stack"}, "invalid queue mode"},
		{"reply_to", SendRequest{From: "a", To: "b", Text: "x", ReplyTo: "\x00"}, "reply_to"},
		{"client id", SendRequest{From: "a", To: "b", Text: "x", ClientMsgID: strings.Repeat("c", MaxClientMsgIDLen+1)}, "invalid client message id"},
		{"attachment", SendRequest{From: "a", To: "b", Attachments: []Attachment{{Type: "x", Name: "n"}}}, "invalid type"},
		{"timeout", SendRequest{From: "a", To: "b", Text: "x", TimeoutMs: -1}, "invalid ask timeout"},
	}
	for _, c := range cases {
		r := c.req
		wantVerdict(t, c.name, ValidateSend(&r), CodeBadRequest, c.want)
	}
}

func TestValidatePublishDefaultsAndRefusals(t *testing.T) {
	t.Parallel()
	req := PublishRequest{Topic: "t", Message: "m"}
	if err := ValidatePublish(&req); err != nil || req.Event != EventUpdate {
		t.Fatalf("plain publish: %v, event %q; want accepted as update", err, req.Event)
	}
	cases := []struct {
		name       string
		req        PublishRequest
		code, want string
	}{
		{"topic", PublishRequest{Topic: "a b", Message: "m"}, CodeBadRequest, "invalid topic"},
		{"event", PublishRequest{Topic: "t", Event: "shout", Message: "m"}, CodeBadRequest, "invalid event"},
		{"no message", PublishRequest{Topic: "t"}, CodeBadRequest, "message is required"},
		{"control", PublishRequest{Topic: "t", Message: "\x02"}, CodeBadRequest, "control character"},
		{"too large", PublishRequest{Topic: "t", Message: strings.Repeat("m", MaxMessageBytes+1)}, CodeTooLarge, "message too large"},
		{"resource alone", PublishRequest{Topic: "t", Message: "m", Resource: "r"}, CodeBadRequest, "go together"},
		{"resource long", PublishRequest{Topic: "t", Message: "m", Resource: strings.Repeat("r", MaxResourceLen+1), Ownership: OwnershipHeld}, CodeBadRequest, "invalid resource"},
		{"ownership", PublishRequest{Topic: "t", Message: "m", Resource: "r", Ownership: "mine"}, CodeBadRequest, "invalid ownership"},
		{"release held", PublishRequest{Topic: "t", Event: EventRelease, Message: "m", Resource: "r", Ownership: OwnershipHeld}, CodeBadRequest, "release cannot declare"},
		{"version", PublishRequest{Topic: "t", Message: "m", Version: -1}, CodeBadRequest, "invalid version"},
		{"client id", PublishRequest{Topic: "t", Message: "m", ClientMsgID: "\x7f"}, CodeBadRequest, "invalid client message id"},
	}
	for _, c := range cases {
		r := c.req
		wantVerdict(t, c.name, ValidatePublish(&r), c.code, c.want)
	}
}

func TestValidateRegister(t *testing.T) {
	t.Parallel()
	req := RegisterRequest{Cwd: "/w"}
	if err := ValidateRegister(&req); err != nil || req.Project != "/w" || req.Status != "idle" {
		t.Fatalf("plain register: %v, project %q, status %q; want accepted with project /w, status idle", err, req.Project, req.Status)
	}
	cases := []struct {
		name string
		req  RegisterRequest
		want string
	}{
		{"name", RegisterRequest{Cwd: "/w", Name: "-x"}, "invalid session name"},
		{"id", RegisterRequest{Cwd: "/w", ID: "short"}, "invalid session id"},
		{"cwd", RegisterRequest{Cwd: ""}, "cwd must not be empty"},
		{"status", RegisterRequest{Cwd: "/w", Status: "asleep"}, "invalid status"},
		{"model", RegisterRequest{Cwd: "/w", Model: "m\n"}, "model must not contain"},
		{"token", RegisterRequest{Cwd: "/w", Holder: true, HolderToken: "a-b"}, "holder_token"},
		{"long token", RegisterRequest{Cwd: "/w", Holder: true, HolderToken: strings.Repeat("a", MaxHolderTokenLen+1)}, "holder_token"},
	}
	for _, c := range cases {
		r := c.req
		wantVerdict(t, c.name, ValidateRegister(&r), CodeBadRequest, c.want)
	}
	ok := RegisterRequest{Cwd: "/w", Name: "worker", ID: "abcdefgh", Model: "m", Holder: true, HolderToken: "Tok3n"}
	wantVerdict(t, "full register", ValidateRegister(&ok), "", "")
}

func TestValidateSmallRequests(t *testing.T) {
	t.Parallel()
	list := ListRequest{}
	wantVerdict(t, "list default", ValidateList(&list), "", "")
	if list.Scope != "project" {
		t.Errorf("list default scope %q, want project", list.Scope)
	}
	wantVerdict(t, "list all", ValidateList(&ListRequest{Scope: "all"}), "", "")
	wantVerdict(t, "list scope", ValidateList(&ListRequest{Scope: "world"}), CodeBadRequest, "invalid scope")
	wantVerdict(t, "state keep", ValidateState(StateRequest{SessionID: "s"}), "", "")
	wantVerdict(t, "state", ValidateState(StateRequest{Status: "tool:"}), CodeBadRequest, "invalid status")
	wantVerdict(t, "state ok", ValidateState(StateRequest{Status: "tool:bash"}), "", "")
	wantVerdict(t, "ack", ValidateAck(AckRequest{SessionID: "s", IDs: []string{"m"}}), "", "")
	wantVerdict(t, "ack none", ValidateAck(AckRequest{SessionID: "s"}), CodeBadRequest, "1-10000 ids")
	wantVerdict(t, "ack many", ValidateAck(AckRequest{SessionID: "s", IDs: make([]string, MaxAckIDs+1)}), CodeBadRequest, "1-10000 ids")
	wantVerdict(t, "ack session", ValidateAck(AckRequest{IDs: []string{"m"}}), CodeBadRequest, "session")
	wantVerdict(t, "askwait", ValidateAskWait(AskWaitRequest{SessionID: "s", AskID: "a", To: "t", WaitSubject: "w"}), "", "")
	wantVerdict(t, "askwait missing", ValidateAskWait(AskWaitRequest{SessionID: "s", AskID: "a", To: "t"}), CodeBadRequest, "wait subject are required")
	wantVerdict(t, "inboxwait", ValidateInboxWait(InboxWaitRequest{SessionID: "s"}), "", "")
	wantVerdict(t, "inboxwait missing", ValidateInboxWait(InboxWaitRequest{}), CodeBadRequest, "session required")
	wantVerdict(t, "subscribe", ValidateSubscribe(SubscribeRequest{Topic: "t@host"}), "", "")
	wantVerdict(t, "subscribe wildcard", ValidateSubscribe(SubscribeRequest{Topic: "t/*"}), CodeBadRequest, "wildcards")
	wantVerdict(t, "topics all", ValidateTopics(TopicsRequest{}), "", "")
	wantVerdict(t, "topics one", ValidateTopics(TopicsRequest{Topic: "a//b"}), CodeBadRequest, "invalid topic")
}

func TestHelpersOfTheWireContract(t *testing.T) {
	t.Parallel()
	if got := Deliver("s1", "tok"); got != "ic.v1.deliver.s1.tok" {
		t.Errorf("Deliver = %q", got)
	}
	if got := BridgeOut("h"); got != "ic.v1.bridge.out.h" {
		t.Errorf("BridgeOut = %q", got)
	}
	for in, want := range map[string][2]string{"w@h": {"w", "h"}, "a@b@h": {"a@b", "h"}} {
		if n, h, ok := SplitRemote(in); !ok || n != want[0] || h != want[1] {
			t.Errorf("SplitRemote(%q) = %q, %q, %v; want %q, %q", in, n, h, ok, want[0], want[1])
		}
	}
	for _, local := range []string{"w", "@h", "w@"} {
		if _, _, ok := SplitRemote(local); ok {
			t.Errorf("SplitRemote(%q) says remote", local)
		}
	}
	e := Errorf(CodeFull, "queue %d", 3)
	if e.Error() != "queue 3" || !errors.Is(e, &Error{Code: CodeFull}) || errors.Is(e, &Error{Code: CodeHeld}) {
		t.Errorf("Errorf/Is: %q matches its code only", e)
	}
	if errors.Is(e, &Error{Code: CodeFull, Message: "other"}) {
		t.Error("an Error with a message matches only itself")
	}
	if ValidHolderToken("") || ValidHolderToken("a b") || !ValidHolderToken("Az09") {
		t.Error("ValidHolderToken: want letters and digits only, not empty")
	}
}
