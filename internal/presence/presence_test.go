package presence

import (
	"errors"
	"strings"
	"testing"

	"github.com/intercom-dev/intercom/pkg/wire"
)

func sess(id, name string, connected bool) *wire.Session {
	return &wire.Session{ID: id, Name: name, Cwd: "/w/" + name, Connected: connected}
}

func targets(all []*wire.Session) map[string]string {
	out := map[string]string{}
	for _, s := range all {
		out[s.ID] = s.Target
	}
	return out
}

func TestAssignTargetsUniqueNameIsTarget(t *testing.T) {
	t.Parallel()
	all := []*wire.Session{
		sess("aaaaaaaa11111111", "alpha", true),
		sess("bbbbbbbb22222222", "beta", true),
	}
	AssignTargets(all)
	got := targets(all)
	if got["aaaaaaaa11111111"] != "alpha" || got["bbbbbbbb22222222"] != "beta" {
		t.Fatalf("targets %v, want names", got)
	}
}

func TestAssignTargetsSharedNameGetsShortestUniquePrefix(t *testing.T) {
	t.Parallel()
	all := []*wire.Session{
		sess("abcdef0123456789", "dup", true),
		sess("abcdef0199999999", "DUP", true), // case-insensitive collision
		sess("ffffffff00000000", "other", true),
	}
	AssignTargets(all)
	got := targets(all)
	// The two ids share "abcdef01"; 9 chars separate them.
	if got["abcdef0123456789"] != "abcdef012" {
		t.Errorf("first dup target %q, want abcdef012", got["abcdef0123456789"])
	}
	if got["abcdef0199999999"] != "abcdef019" {
		t.Errorf("second dup target %q, want abcdef019", got["abcdef0199999999"])
	}
	if got["ffffffff00000000"] != "other" {
		t.Errorf("other target %q, want other", got["ffffffff00000000"])
	}
	for id, tg := range got {
		if tg != "other" && len(tg) < MinPrefix {
			t.Errorf("target %q of %s shorter than %d", tg, id, MinPrefix)
		}
	}
}

func TestAssignTargetsMinimumPrefixLength(t *testing.T) {
	t.Parallel()
	all := []*wire.Session{
		sess("11111111aaaaaaaa", "x", true),
		sess("22222222bbbbbbbb", "x", true),
	}
	AssignTargets(all)
	for _, s := range all {
		if s.Target != s.ID[:MinPrefix] {
			t.Errorf("target %q, want the 8-char prefix %q", s.Target, s.ID[:MinPrefix])
		}
	}
}

func TestAssignTargetsNameThatIsPrefixOfAnotherID(t *testing.T) {
	t.Parallel()
	// "deadbeef" as a name is also an 8-char prefix of the other session's id,
	// so the name cannot be its target.
	all := []*wire.Session{
		sess("0123456789abcdef", "deadbeef", true),
		sess("deadbeef99999999", "victim", true),
	}
	AssignTargets(all)
	if all[0].Target == "deadbeef" {
		t.Fatalf("name that prefixes another id was used as target")
	}
	if all[0].Target != "01234567" {
		t.Errorf("target %q, want 01234567", all[0].Target)
	}
	if all[1].Target != "victim" {
		t.Errorf("victim target %q", all[1].Target)
	}
}

func TestAssignTargetsPrefixSkipsNames(t *testing.T) {
	t.Parallel()
	// A prefix equal to some session's name is not usable as a target.
	all := []*wire.Session{
		sess("cafebabe00001111", "dup", true),
		sess("cafebabe00002222", "dup", true),
		sess("1234567812345678", "cafebabe00001", true),
	}
	AssignTargets(all)
	if all[0].Target == "cafebabe00001" {
		t.Fatalf("target equals another session's name")
	}
	if all[0].Target != "cafebabe000011" {
		t.Errorf("target %q, want cafebabe000011", all[0].Target)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	all := []*wire.Session{
		sess("abcdef0123456789", "dup", true),
		sess("abcdef0199999999", "dup", true),
		sess("1111111122222222", "alpha", true),
		sess("3333333344444444", "gone", false),
		sess("5555555566666666", "alpha", false), // disconnected namesake
	}
	AssignTargets(all)
	cases := []struct {
		name, target, self string
		wantID             string
		wantErr            error
		errHas             []string
	}{
		{name: "exact id", target: "abcdef0123456789", wantID: "abcdef0123456789"},
		{name: "unique name", target: "alpha", wantID: "1111111122222222"},
		{name: "name case-insensitive", target: "ALPHA", wantID: "1111111122222222"},
		{name: "8-char prefix", target: "11111111", wantID: "1111111122222222"},
		{name: "shown target of dup", target: "abcdef012", wantID: "abcdef0123456789"},
		{name: "ambiguous name", target: "dup", wantErr: ErrAmbiguous, errHas: []string{"abcdef012", "abcdef019", "ambiguous"}},
		{name: "ambiguous prefix", target: "abcdef01", wantErr: ErrAmbiguous},
		{name: "prefix too short", target: "abcd", wantErr: ErrShort, errHas: []string{"shorter than 8"}},
		{name: "7 chars too short", target: "1111111", wantErr: ErrShort},
		{name: "unknown", target: "nobody", wantErr: ErrNotFound},
		{name: "empty", target: "  ", wantErr: ErrNotFound},
		{name: "self by name", target: "alpha", self: "1111111122222222", wantErr: ErrSelf},
		{name: "self by id", target: "1111111122222222", self: "1111111122222222", wantErr: ErrSelf},
		{name: "disconnected fallback", target: "gone", wantID: "3333333344444444"},
		{name: "disconnected by prefix", target: "33333333", wantID: "3333333344444444"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Resolve(all, c.target, c.self)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("Resolve(%q) err %v, want %v", c.target, err, c.wantErr)
				}
				for _, h := range c.errHas {
					if !strings.Contains(err.Error(), h) {
						t.Errorf("error %q lacks %q", err, h)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", c.target, err)
			}
			if s.ID != c.wantID {
				t.Fatalf("Resolve(%q) = %s, want %s", c.target, s.ID, c.wantID)
			}
		})
	}
}

func TestResolvePrefersConnected(t *testing.T) {
	t.Parallel()
	// "alpha" is connected once and disconnected once: the connected wins and
	// it is not ambiguous.
	all := []*wire.Session{
		sess("5555555566666666", "alpha", false),
		sess("1111111122222222", "alpha", true),
	}
	AssignTargets(all)
	s, err := Resolve(all, "alpha", "")
	if err != nil || s.ID != "1111111122222222" {
		t.Fatalf("got %v, %v; want the connected alpha", s, err)
	}
}

func TestResolveAmbiguousChoicesAreCopyable(t *testing.T) {
	t.Parallel()
	all := []*wire.Session{
		sess("abcdef0123456789", "dup", true),
		sess("abcdef0199999999", "dup", true),
	}
	AssignTargets(all)
	_, err := Resolve(all, "dup", "")
	var amb *AmbiguousError
	if !errors.As(err, &amb) {
		t.Fatalf("err %v, want *AmbiguousError", err)
	}
	if len(amb.Choices) != 2 {
		t.Fatalf("choices %v, want 2", amb.Choices)
	}
	for _, ch := range amb.Choices {
		tg := strings.Fields(ch)[0]
		s, err := Resolve(all, tg, "")
		if err != nil {
			t.Fatalf("choice %q not resolvable: %v", tg, err)
		}
		if !strings.HasPrefix(s.ID, tg) {
			t.Fatalf("choice %q resolved to %s", tg, s.ID)
		}
	}
}

func TestDeriveState(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	cases := []struct {
		status string
		accept *bool
		want   string
	}{
		{"idle", nil, wire.StateIdle},
		{"idle · reviewing", nil, wire.StateIdle},
		{"thinking", nil, wire.StateBusy},
		{"tool:bash", nil, wire.StateBusy},
		{"weird", nil, wire.StateUnknown},
		{"", nil, wire.StateUnknown},
		{"thinking", &yes, wire.StateIdle},
		{"idle", &no, wire.StateBusy},
	}
	for _, c := range cases {
		if got := DeriveState(c.status, c.accept); got != c.want {
			t.Errorf("DeriveState(%q, %v) = %q, want %q", c.status, c.accept, got, c.want)
		}
	}
}

func TestAliasAndIDs(t *testing.T) {
	t.Parallel()
	id := NewID()
	if err := wire.ValidID(id); err != nil {
		t.Fatalf("NewID %q invalid: %v", id, err)
	}
	if id == NewID() {
		t.Fatal("NewID repeated")
	}
	if a := Alias("ABCDEF0123456789"); a != "session-abcdef01" {
		t.Errorf("Alias = %q", a)
	}
}
