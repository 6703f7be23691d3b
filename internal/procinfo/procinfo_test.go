package procinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestReadSelfAndParent(t *testing.T) {
	t.Parallel()
	me, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if me.Parent != os.Getppid() {
		t.Fatalf("parent %d, want %d", me.Parent, os.Getppid())
	}
	if me.Zombie || me.Start == 0 || me.Name == "" {
		t.Fatalf("self info %+v", me)
	}
	if again, _ := Read(os.Getpid()); again.Start != me.Start {
		t.Fatalf("start time moved: %d then %d", me.Start, again.Start)
	}
}

// A child's name is its command's, its parent is us, it is alive while it
// runs, a zombie once it exits unreaped and gone once reaped.
func TestChildLifecycle(t *testing.T) {
	t.Parallel()
	// A copy named with a space and a parenthesis tests the comm parsing.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	odd := filepath.Join(t.TempDir(), "sl (x")
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(odd, data, 0o700); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(odd, "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	in, err := Read(pid)
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "sl (x" || in.Parent != os.Getpid() || in.Zombie || !Alive(pid) {
		t.Fatalf("child info %+v alive %t", in, Alive(pid))
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Unreaped, it turns into a zombie; Alive says no.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		in, err := Read(pid)
		if err != nil {
			t.Fatalf("child vanished before it was reaped: %v", err)
		}
		if in.Zombie {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("killed child never became a zombie: %+v", in)
		}
	}
	if Alive(pid) {
		t.Fatal("a zombie counted as alive")
	}
	_ = c.Wait()
	if _, err := Read(pid); err == nil {
		t.Fatal("a reaped child still reads")
	}
	if Alive(pid) || Alive(0) || Alive(-1) {
		t.Fatal("Alive of a reaped, zero or negative pid")
	}
}
