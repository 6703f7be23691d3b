package pidfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFormatParseRoundTrip(t *testing.T) {
	t.Parallel()
	for _, rec := range []Record{
		{Pid: 1234},
		{Pid: 42, Identity: &Identity{Scheme: schemeLinux, Boot: "0a1b2c3d-aaaa-bbbb-cccc-0123456789ab", PidNS: "4026531836", Start: 987654321}},
		{Pid: 43, Identity: &Identity{Scheme: schemeDarwin, Boot: "1764000000", Start: 1764000123456789}},
	} {
		text := Format(rec.Pid, rec.Identity)
		got, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q): %v", text, err)
		}
		if !reflect.DeepEqual(got, rec) {
			t.Fatalf("round trip %q: got %+v want %+v", text, got, rec)
		}
	}
	if got := Format(7, &Identity{Scheme: schemeLinux, Boot: "b", PidNS: "n", Start: 9}); got != "7\nlinux-v1 b n 9\n" {
		t.Fatalf("Format = %q", got)
	}
	if got := Format(7, &Identity{Scheme: schemeDarwin, Boot: "1764000000", Start: 9}); got != "7\ndarwin-v1 1764000000 9\n" {
		t.Fatalf("Format = %q", got)
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "abc\n", "0\n", "-5\n", "12\nlinux-v2 a b 1\n", "12\nlinux-v1 a b\n", "12\nlinux-v1 a b x\n", "12\ndarwin-v1 1 2 3\n", "12\ndarwin-v1 1\n", "12\ndarwin-v2 1 2\n", "12\ndarwin-v1 1 -2\n"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

func TestWriteAndRead(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "broker.pid")
	if err := Write(p); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	rec, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Pid != os.Getpid() || rec.Identity == nil {
		t.Fatalf("record %+v", rec)
	}
	if v := Judge(rec); v != Live {
		t.Fatalf("own fresh record judged %v, want live", v)
	}
	Remove(p)
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("Remove left the file: %v", err)
	}
}

func TestRemoveKeepsOtherProcessRecord(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "broker.pid")
	if err := os.WriteFile(p, []byte(Format(os.Getpid()+100000, nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	Remove(p)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("Remove deleted another process's record: %v", err)
	}
}

func deadPid(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

func TestJudge(t *testing.T) {
	t.Parallel()
	self, err := Self(os.Getpid())
	if err != nil {
		t.Fatalf("Self: %v", err)
	}
	other := *self
	other.Start++
	otherNS := *self
	otherNS.PidNS = "1"
	otherOS := *self
	otherOS.Scheme = map[string]string{schemeLinux: schemeDarwin, schemeDarwin: schemeLinux}[self.Scheme]
	dead := deadPid(t)
	cases := []struct {
		name string
		rec  Record
		want Verdict
	}{
		{"dead pid with identity", Record{Pid: dead, Identity: self}, Stale},
		{"dead pid numeric only", Record{Pid: dead}, Stale},
		{"zero pid", Record{}, Stale},
		{"own pid real identity", Record{Pid: os.Getpid(), Identity: self}, Live},
		{"own pid other start time", Record{Pid: os.Getpid(), Identity: &other}, Stale},
		{"own pid written by another OS", Record{Pid: os.Getpid(), Identity: &otherOS}, Stale},
		{"live pid numeric only", Record{Pid: os.Getpid()}, Unprovable},
	}
	for _, c := range cases {
		if got := Judge(c.rec); got != c.want {
			t.Errorf("%s: Judge = %v, want %v", c.name, got, c.want)
		}
	}
}

// The comparison rule of each scheme, independent of the OS running the test:
// Linux compares boot, namespace and start; macOS only the start time,
// because kern.boottime moves when the clock is stepped.
func TestSameProcess(t *testing.T) {
	t.Parallel()
	lin := Identity{Scheme: schemeLinux, Boot: "b1", PidNS: "n1", Start: 100}
	mac := Identity{Scheme: schemeDarwin, Boot: "1764000000", Start: 1764000123456789}
	with := func(id Identity, f func(*Identity)) *Identity { f(&id); return &id }
	cases := []struct {
		name     string
		rec, now *Identity
		want     bool
	}{
		{"linux same", &lin, with(lin, func(*Identity) {}), true},
		{"linux other boot", &lin, with(lin, func(i *Identity) { i.Boot = strings.Repeat("f", 8) }), false},
		{"linux other namespace", &lin, with(lin, func(i *Identity) { i.PidNS = "n2" }), false},
		{"linux other start", &lin, with(lin, func(i *Identity) { i.Start++ }), false},
		{"darwin same", &mac, with(mac, func(*Identity) {}), true},
		{"darwin boot time moved with the clock", &mac, with(mac, func(i *Identity) { i.Boot = "1764000003" }), true},
		{"darwin other start", &mac, with(mac, func(i *Identity) { i.Start++ }), false},
		{"record from the other OS", &mac, with(lin, func(i *Identity) { i.Start = mac.Start }), false},
	}
	for _, c := range cases {
		if got := sameProcess(c.rec, c.now); got != c.want {
			t.Errorf("%s: sameProcess = %t, want %t", c.name, got, c.want)
		}
	}
}

func TestJudgeChildProcess(t *testing.T) {
	t.Parallel()
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	id, err := Self(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Parse(Format(c.Process.Pid, id))
	if err != nil {
		t.Fatal(err)
	}
	if v := Judge(rec); v != Live {
		t.Fatalf("live child judged %v, want live", v)
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	if v := Judge(rec); v != Stale {
		t.Fatalf("reaped child judged %v, want stale", v)
	}
}

func TestVerdictString(t *testing.T) {
	t.Parallel()
	if Stale.String() != "stale" || Live.String() != "live" || Unprovable.String() != "unprovable" {
		t.Fatal("verdict names")
	}
}
