package proctree

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

func TestGetSelfAndAncestors(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no process tree reader on", runtime.GOOS)
	}
	me, err := Get(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if me.PPid != os.Getppid() || me.Start == 0 || me.Comm == "" {
		t.Fatalf("self %+v, want ppid %d and a start stamp", me, os.Getppid())
	}
	again, _ := Get(os.Getpid())
	if again.Key() != me.Key() {
		t.Fatalf("key changed: %s then %s", me.Key(), again.Key())
	}
	anc := Ancestors(os.Getpid(), 64)
	if len(anc) == 0 || anc[0].Pid != os.Getppid() {
		t.Fatalf("ancestors %+v, want the parent %d first", anc, os.Getppid())
	}
	for i := 1; i < len(anc); i++ {
		if anc[i].Pid != anc[i-1].PPid {
			t.Fatalf("ancestor %d is %d, want the parent of %d (%d)", i, anc[i].Pid, anc[i-1].Pid, anc[i-1].PPid)
		}
	}
	if b, err := Boot(); err != nil || b == "" {
		t.Fatalf("boot %q %v", b, err)
	}
}

func TestAliveEndsWithTheProcess(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("no process tree reader on", runtime.GOOS)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p, err := Get(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if p.PPid != os.Getpid() || !Alive(p) {
		t.Fatalf("child %+v: want parent %d and alive", p, os.Getpid())
	}
	if other := (Proc{Pid: p.Pid, Start: p.Start + 1}); Alive(other) {
		t.Fatal("a different start stamp counts as the same process")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if Alive(p) {
		t.Fatal("reaped child still alive")
	}
	if _, err := Get(p.Pid); err == nil {
		t.Fatal("Get of a reaped pid succeeded")
	}
}
