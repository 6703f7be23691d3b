package wire

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCleanReservationPath(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "src/a.go", want: "src/a.go"},
		{in: "src//b/../a.go", want: "src/a.go"},
		{in: "src/", want: "src"},
		{in: "**/*.go", want: "**/*.go"},
		{in: "", err: "empty reservation path"},
		{in: "a\x00b", err: "bad reservation path"},
		{in: strings.Repeat("a", 4097), err: "bad reservation path"},
		{in: "/etc/passwd", err: "is absolute"},
		{in: "..", err: "outside the project"},
		{in: "a/../../b", err: "outside the project"},
		{in: "src/[a", err: "syntax error in pattern"},
	} {
		got, err := CleanReservationPath(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !isBadRequest(err) {
				t.Errorf("CleanReservationPath(%.20q) = %q, %v; want a bad_request naming %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("CleanReservationPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestValidateReserve(t *testing.T) {
	ok := func() ReserveRequest {
		return ReserveRequest{SessionID: "s1", Project: "/src/p", Paths: []string{"a/./b.go"}, TTL: time.Minute}
	}
	for _, tc := range []struct {
		name string
		edit func(*ReserveRequest)
		err  string
	}{
		{name: "good"},
		{name: "no session", edit: func(r *ReserveRequest) { r.SessionID = "" }, err: "no session"},
		{name: "no project", edit: func(r *ReserveRequest) { r.Project = "" }, err: "no project"},
		{name: "no path", edit: func(r *ReserveRequest) { r.Paths = nil }, err: "no path"},
		{name: "negative ttl", edit: func(r *ReserveRequest) { r.TTL = -time.Second }, err: "out of range"},
		{name: "huge ttl", edit: func(r *ReserveRequest) { r.TTL = MaxReservationTTL + time.Second }, err: "out of range"},
		{name: "long reason", edit: func(r *ReserveRequest) { r.Reason = strings.Repeat("x", 1001) }, err: "reason longer"},
		{name: "bad path", edit: func(r *ReserveRequest) { r.Paths = []string{"ok", "/abs"} }, err: "is absolute"},
	} {
		req := ok()
		if tc.edit != nil {
			tc.edit(&req)
		}
		err := ValidateReserve(&req)
		if tc.err == "" {
			if err != nil || req.Paths[0] != "a/b.go" {
				t.Errorf("%s: %v, paths %q; want accepted and cleaned", tc.name, err, req.Paths)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.err)
		}
	}
}

func TestReservationConflictString(t *testing.T) {
	c := ReservationConflict{Path: "src/a.go", Held: ReservationInfo{
		SessionID: "s9", Path: "src", Shared: true, Reason: "moving src", Token: 7, Granted: time.Now().Add(-time.Minute),
	}}
	got := c.String()
	for _, want := range []string{"src/a.go is reserved (shared) by s9", `("moving src")`, "through src", "token 7", `intercom ask s9 "may I edit src/a.go?"`} {
		if !strings.Contains(got, want) {
			t.Errorf("conflict line %q lacks %q", got, want)
		}
	}
}

func isBadRequest(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeBadRequest
}
