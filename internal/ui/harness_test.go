package ui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/intercom-dev/intercom/internal/brokertest"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// world is a real in-process broker with a temp home, and a project dir.
type world struct {
	t    *testing.T
	home string
	proj string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	return &world{t: t, home: brokertest.Start(t), proj: proj}
}

func (w *world) client() *intercom.Client {
	w.t.Helper()
	return brokertest.Connect(w.t, w.home)
}

// peer attaches a session named name in dir (default: the project).
func (w *world) peer(name, dir string) (*intercom.Client, *intercom.Session) {
	w.t.Helper()
	if dir == "" {
		dir = w.proj
	}
	c := w.client()
	s, err := c.Attach(context.Background(), intercom.AttachOptions{Name: name, Cwd: dir})
	if err != nil {
		w.t.Fatal(err)
	}
	return c, s
}

// ui builds the model as `intercom ui --name alice` does, and a driver.
func (w *world) ui(mod func(*Options)) *driver {
	w.t.Helper()
	c, s := w.peer("alice", "")
	return w.uiFor(c, s, mod)
}

func (w *world) uiFor(c *intercom.Client, s *intercom.Session, mod func(*Options)) *driver {
	o := Options{Client: c, Session: s, Cwd: w.proj, Refresh: 50 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	m := New(o)
	d := &driver{t: w.t, m: m, msgs: make(chan tea.Msg, 1024), done: make(chan struct{})}
	w.t.Cleanup(func() { close(d.done); m.Close() })
	d.exec(m.Init())
	return d
}

// driver plays the Bubble Tea runtime: it feeds messages to Update on the
// test goroutine and runs the returned commands in goroutines.
type driver struct {
	t    *testing.T
	m    *Model
	msgs chan tea.Msg
	done chan struct{}
	quit bool
}

func (d *driver) exec(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if msg == nil {
			return
		}
		select {
		case d.msgs <- msg:
		case <-d.done:
		}
	}()
}

func (d *driver) process(msg tea.Msg) {
	switch msg := msg.(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			d.exec(c)
		}
	case tea.QuitMsg:
		d.quit = true
	default:
		_, cmd := d.m.Update(msg)
		d.exec(cmd)
	}
}

// pump handles whatever messages arrive within wait.
func (d *driver) pump(wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case msg := <-d.msgs:
			d.process(msg)
		case <-t.C:
			return
		}
	}
}

// eventually pumps messages until cond holds for the screen, with styling
// stripped (10 s bound).
func (d *driver) eventually(what string, cond func(screen string) bool) string {
	d.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := ansi.Strip(d.m.Screen())
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
		}
		d.pump(20 * time.Millisecond)
	}
}

func (d *driver) waitFor(sub string) string {
	d.t.Helper()
	return d.eventually("screen to show "+strconvQuote(sub), func(s string) bool { return strings.Contains(s, sub) })
}

func pasteMsg(s string) tea.PasteMsg { return tea.PasteMsg{Content: s} }

func strconvQuote(s string) string { return "\"" + s + "\"" }

// press sends real key presses, named as Bubble Tea names them.
func (d *driver) press(names ...string) {
	d.t.Helper()
	for _, n := range names {
		d.process(keyMsg(n))
		d.pump(0)
	}
}

// typ types text one key at a time.
func (d *driver) typ(s string) {
	for _, r := range s {
		if r == ' ' {
			d.process(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
			continue
		}
		d.process(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func keyMsg(n string) tea.KeyPressMsg {
	switch n {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "alt+shift+m": // what a legacy terminal's ESC M decodes to
		return tea.KeyPressMsg{Code: 'm', ShiftedCode: 'M', Mod: tea.ModAlt | tea.ModShift}
	case "alt+enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}
	}
	if strings.HasPrefix(n, "ctrl+") && len(n) == 6 {
		return tea.KeyPressMsg{Code: rune(n[5]), Mod: tea.ModCtrl}
	}
	r := []rune(n)
	return tea.KeyPressMsg{Code: r[0], Text: n}
}

// next waits for a message pushed to s.
func next(t *testing.T, s *intercom.Session) wire.Message {
	t.Helper()
	select {
	case m := <-s.Messages():
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
	}
	return wire.Message{}
}
