package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The commands the Pi extension (integrations/pi) is built on, run as it
// runs them: attach --control holds the session, prints each message with
// the text for the model (reply hint included) and acknowledges it only
// when told on stdin; its state lines carry the configured suffix; the end
// of stdin detaches. `tool intercom` is the MCP tool's logic; `config`
// and `send --request-reply` feed the /intercom overlay.
func TestPiExtensionCommands(t *testing.T) {
	t.Parallel()
	h := newH(t)
	h.WriteConfig(`{"status": "researching", "confirmSend": true}`)
	c := h.cmd(context.Background(), "intercom", "--json", "attach", "--control", "--id", "pi-0123456789abcdef", "--name", "pi-api")
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pi := h.startCmd(c)
	checkJSON(t, "intercom-attach-attached", nextLine(t, pi, "attached line"))
	peer, _ := h.Attach("--name", "peer")

	// A Request Reply message: shown with the reply hint, not acknowledged.
	h.OK("-s", "peer", "send", "--request-reply", "pi-api", "which port?")
	line := nextLine(t, pi, "message")
	checkJSON(t, "intercom-message", line)
	var m struct {
		ID           string `json:"id"`
		ExpectsReply bool   `json:"expects_reply"`
		Rendered     string `json:"rendered"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	if !m.ExpectsReply || !strings.Contains(m.Rendered, `intercom({ action: "reply"`) || !strings.Contains(m.Rendered, "which port?") {
		t.Errorf("message for the model: %+v", m)
	}
	peek := func() string { return h.OK("-s", "pi-api", "--json", "inbox", "--peek") }
	if !strings.Contains(peek(), m.ID) {
		t.Errorf("the message was acknowledged before the extension said so")
	}
	fmt.Fprintf(stdin, `{"ack":[%q]}`+"\n", m.ID)
	Eventually(t, 20*time.Second, func() bool { return !strings.Contains(peek(), m.ID) }, "the ack line to acknowledge the message")

	fmt.Fprintln(stdin, `{"state":"tool:bash"}`)
	Eventually(t, 20*time.Second, func() bool {
		r := Row(h.Sessions(), "pi-api")
		return r != nil && r["status"] == "tool:bash · researching"
	}, "the state line to set status tool:bash · researching")
	fmt.Fprintln(stdin, `{"state":"bogus state"}`)
	if ev := pi.Event(20 * time.Second); ev["event"] != "error" {
		t.Errorf("a bad state line: %v, want an error event", ev)
	}

	// tool intercom: the MCP tool's text; a refused call is the error envelope.
	out := runJSON(t, h, "intercom", "intercom-tool", 0, "-s", "pi-api", "tool", "intercom", `{"action":"send","to":"peer","message":"port 8080"}`)
	if !strings.Contains(out, "Message sent to peer") {
		t.Errorf("tool send: %s", out)
	}
	if ev := peer.Event(20 * time.Second); ev["text"] != "port 8080" {
		t.Errorf("peer got %v", ev)
	}
	res := h.RunIn("", `{"action":"list"}`, "-s", "pi-api", "tool", "intercom")
	if res.Code != 0 || !strings.Contains(res.Stdout, "peer") {
		t.Errorf("tool list from stdin: %+v", res)
	}
	res = h.Run("--json", "-s", "pi-api", "tool", "intercom", `{"action":"shout"}`)
	if res.Code != 1 || !strings.Contains(res.Stdout, "invalid action") {
		t.Errorf("tool with a bad action: %+v", res)
	}
	if res := h.Run("tool", "contact_supervisor", `{"reason":"need_decision","message":"x"}`); res.Code == 0 {
		t.Errorf("contact_supervisor outside a run succeeded: %+v", res)
	}

	if d := runJSON(t, h, "intercom", "intercom-tool-describe", 0, "tool", "--describe"); !strings.Contains(d, "Find and message the other agent sessions") {
		t.Errorf("tool --describe: %s", d)
	}
	if res := h.Run("tool"); res.Code != 2 {
		t.Errorf("tool with no tool: exit %d, want 2", res.Code)
	}
	cfg := runJSON(t, h, "intercom", "intercom-config", 0, "config")
	if !strings.Contains(cfg, `"confirmSend":true`) || !strings.Contains(cfg, `"shortcut":"alt+shift+m"`) {
		t.Errorf("config --json: %s", cfg)
	}

	// The end of stdin detaches the session.
	stdin.Close()
	if code := pi.ExitCode(20 * time.Second); code != 0 {
		t.Errorf("attach --control exited %d at the end of stdin", code)
	}
	Eventually(t, 20*time.Second, func() bool {
		r := Row(h.Sessions("--all"), "pi-api")
		return r != nil && r["connected"] == false
	}, "the session to disconnect")
	if res := h.Run("attach", "--control"); res.Code != 2 {
		t.Errorf("--control without --json: exit %d, want 2", res.Code)
	}
}

// install pi into PI_CODING_AGENT_DIR and back out, through the binary.
func TestInstallPiCommand(t *testing.T) {
	t.Parallel()
	h := newH(t)
	agent := filepath.Join(t.TempDir(), "agent")
	env := []string{"PI_CODING_AGENT_DIR=" + agent, "HOME=" + t.TempDir()}
	res, _ := h.runMeasured("intercom", nil, env, "--json", "install", "pi")
	if res.Code != 0 {
		t.Fatalf("install pi: %+v", res)
	}
	checkJSON(t, "intercom-install", res.Stdout)
	data, err := os.ReadFile(filepath.Join(agent, "intercom-package", "intercom.json"))
	if err != nil || !strings.Contains(string(data), "intercom") {
		t.Fatalf("intercom.json: %s %v", data, err)
	}
	if res, _ := h.runMeasured("intercom", nil, env, "install", "pi", "--project"); res.Code != 2 {
		t.Errorf("install pi --project: exit %d, want 2", res.Code)
	}
	if res, _ := h.runMeasured("intercom", nil, env, "uninstall", "pi"); res.Code != 0 {
		t.Fatalf("uninstall pi: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(agent, "intercom-package")); !os.IsNotExist(err) {
		t.Errorf("package left after uninstall: %v", err)
	}
}

// Inside a run the Pi extension fetches the child's messages with
// `intercom --json inbox`: each comes with rendered, the text the model is
// shown (sender, id and time), and is acknowledged.
func TestInboxJSONRendered(t *testing.T) {
	t.Parallel()
	h := newH(t)
	_, ev := h.Attach("--name", "boss")
	boss := ev["id"].(string)
	kid, _ := h.Attach("--id", "child-0123abcd", "--name", "kid")
	kid.Signal(syscall.SIGTERM) // detached: the message waits in its inbox
	h.OK("--session", boss, "send", "child-0123abcd", "which port?")
	var page struct {
		Messages []struct {
			ID       string `json:"id"`
			Rendered string `json:"rendered"`
		} `json:"messages"`
	}
	h.JSON(&page, "--session", "child-0123abcd", "inbox")
	if len(page.Messages) != 1 {
		t.Fatalf("inbox --json gave %d messages, want 1", len(page.Messages))
	}
	r := page.Messages[0].Rendered
	for _, want := range []string{" boss** (Native session cwd", "which port?", page.Messages[0].ID} {
		if !strings.Contains(r, want) {
			t.Errorf("rendered lacks %q:\n%s", want, r)
		}
	}
	h.JSON(&page, "--session", "child-0123abcd", "inbox")
	if len(page.Messages) != 0 {
		t.Errorf("the fetched message was not acknowledged: %d still waiting", len(page.Messages))
	}
}
