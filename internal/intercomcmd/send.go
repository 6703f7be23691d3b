package intercomcmd

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/procinfo"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/tty"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// MessageFlags are shared by send and ask.
type MessageFlags struct {
	Files    []string `name:"file" help:"Attach a file; its content is read now." placeholder:"PATH" type:"path"`
	Snippets []string `name:"snippet" help:"Attach a snippet: NAME[:LANG]=PATH." placeholder:"NAME[:LANG]=PATH"`
	Contexts []string `name:"context" help:"Attach context text: NAME=TEXT." placeholder:"NAME=TEXT"`
}

// SendCmd sends a message.
type SendCmd struct {
	To        string   `arg:"" help:"Target: name, full id or id prefix (>= 8 chars)."`
	Message   []string `arg:"" help:"Message text ('-' reads stdin)."`
	Delivery  string   `enum:"steer,queue,passive," default:"" help:"steer (default): reach it at the next tool boundary, wake it if idle; queue: hold until it is idle; passive: record only, never wake (discouraged)."`
	QueueMode string   `name:"queue-mode" enum:"stack,replace," default:"" help:"With queued delivery (implied): stack (the default) keeps every message; replace keeps only the newest undelivered one of --thread from you."`
	Thread    string   `help:"Thread key for --queue-mode replace." placeholder:"T"`
	ReplyTo   string   `name:"reply-to" help:"Mark this message as the answer to message ID." placeholder:"ID"`
	ClientID  string   `name:"client-id" help:"Idempotency key: a retried send with the same key is stored once (keys are per sender; without --session, per recipient)." placeholder:"KEY"`
	Yes       bool     `short:"y" help:"Skip the confirmSend prompt."`
	Request   bool     `name:"request-reply" help:"Mark the message as needing a reply (the recipient is shown the reply hint); unlike ask, do not wait for it."`
	MessageFlags
}

// Help shows examples.
func (SendCmd) Help() string {
	return `Returns once the message is durably in the recipient's inbox and prints its
id. A disconnected recipient keeps receiving: the message waits in its inbox
and is delivered, oldest first, when it resumes.

Run by an agent (Claude Code, Codex) it comes from the agent's session
(docs/agents.md). Otherwise, without --session, it comes from an ephemeral
session named after the calling process (cli-<command>-<pid>), which nobody
can reply to.

Examples:
  intercom send research "Check UserService.validate() for null input"
  intercom --session planner send worker "Step 2 is ready" --file plan.md
  intercom send worker --snippet auth.ts:typescript=src/auth.ts "Here is the fix"
  intercom send worker --delivery queue --queue-mode replace --thread build "build 41% done"
  echo "long text" | intercom send worker -`
}

// attachments builds the attachment list from the flags. The files are
// read through what is left of the message limit after text, so however
// many and however large they are, at most that much is read.
func (f *MessageFlags) attachments(text string) ([]wire.Attachment, error) {
	var out []wire.Attachment
	left := func() int64 {
		m := wire.Message{Text: text, Attachments: out}
		return int64(max(wire.MaxMessageBytes-m.Size(), 0))
	}
	read := func(flag, path string) ([]byte, error) {
		data, err := bounded.ReadFile(path, flag+" "+path, left())
		var tl *bounded.TooLargeError
		switch {
		case errors.As(err, &tl) && tl.Size >= 0:
			return nil, tooLarge(fmt.Sprintf("message too large: %s is %d bytes; max %d for the whole message (text and attachments)", tl.What, tl.Size, wire.MaxMessageBytes))
		case errors.As(err, &tl):
			return nil, tooLarge(fmt.Sprintf("message too large: %s is over %d bytes; max %d for the whole message (text and attachments)", tl.What, tl.Max, wire.MaxMessageBytes))
		case err != nil:
			return nil, kongrun.Usagef("%s %s: %v", flag, path, cmp.Or(errors.Unwrap(err), err))
		}
		return data, nil
	}
	for _, p := range f.Files {
		data, err := read("--file", p)
		if err != nil {
			return nil, err
		}
		out = append(out, wire.Attachment{Type: "file", Name: filepath.Base(p), Path: p, Content: string(data)})
	}
	for _, s := range f.Snippets {
		spec, path, ok := strings.Cut(s, "=")
		name, lang, _ := strings.Cut(spec, ":")
		if !ok || name == "" || path == "" {
			return nil, kongrun.Usagef("--snippet %q: want NAME[:LANG]=PATH", s)
		}
		data, err := read("--snippet", path)
		if err != nil {
			return nil, err
		}
		out = append(out, wire.Attachment{Type: "snippet", Name: name, Language: lang, Path: path, Content: string(data)})
	}
	for _, c := range f.Contexts {
		name, text, ok := strings.Cut(c, "=")
		if !ok || name == "" {
			return nil, kongrun.Usagef("--context %q: want NAME=TEXT", c)
		}
		out = append(out, wire.Attachment{Type: "context", Name: name, Content: text})
	}
	return out, nil
}

// tooLarge is a usage error (exit 2, code too_large) with its own wording.
type tooLarge string

func (t tooLarge) Error() string { return string(t) }
func (t tooLarge) Unwrap() error { return bounded.ErrTooLarge }

// messageText joins the words, reading stdin (at most the message limit)
// for "-".
func messageText(e *env, words []string) (string, error) {
	if len(words) == 1 && words[0] == "-" {
		data, err := bounded.Read(e.stdin, "stdin", wire.MaxMessageBytes)
		if errors.Is(err, bounded.ErrTooLarge) {
			return "", kongrun.Usagef("message too large: %w", err)
		}
		if err != nil {
			return "", fmt.Errorf("read stdin: %w", err)
		}
		return string(data), nil
	}
	return strings.Join(words, " "), nil
}

// checkMessage validates text and attachments before contacting the broker,
// by the broker's own rule.
func checkMessage(text string, att []wire.Attachment) error {
	if err := wire.ValidateMessage(text, att); err != nil {
		return kongrun.Usagef("%v", err)
	}
	return nil
}

// sender returns the sending session id: --session, or a fresh ephemeral
// session named after the calling process.
func (e *env) sender(c *intercom.Client) (string, error) {
	if e.g.Session != "" {
		return e.self(c)
	}
	s, err := c.Attach(e.ctx, intercom.AttachOptions{Name: callerName(), Ephemeral: true, NoDeliver: true})
	if err != nil {
		return "", fmt.Errorf("register ephemeral sender: %w", err)
	}
	return s.ID(), nil
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_-]+`)

// callerName is cli-<parent command>-<parent pid>.
func callerName() string {
	ppid := os.Getppid()
	parent, _ := procinfo.Read(ppid)
	n := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(parent.Name), "-"), "-")
	if n == "" {
		n = "shell"
	}
	if len(n) > 32 {
		n = n[:32]
	}
	return fmt.Sprintf("cli-%s-%d", n, ppid)
}

// confirm asks y/N on the terminal.
func (e *env) confirm(prompt string) bool {
	fmt.Fprintf(e.stderr, "%s [y/N] ", prompt)
	line, _ := bufio.NewReader(e.stdin).ReadString('\n')
	line = strings.ToLower(strings.TrimSpace(line))
	return line == "y" || line == "yes"
}

// Run sends.
func (s *SendCmd) Run(e *env) error {
	req, err := s.request(e)
	if err != nil {
		return err
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	if e.cfg.ConfirmSend && req.ReplyTo == "" && !s.Yes && tty.Is(e.stdin) {
		if !e.confirm(fmt.Sprintf("Send this message to %s?", s.To)) {
			return kongrun.Exit(1, "send cancelled")
		}
	}
	if req.From, err = e.sender(c); err != nil {
		return err
	}
	res, err := c.Send(e.ctx, req)
	if err != nil {
		return fmt.Errorf("send to %s: %w", s.To, err)
	}
	if e.g.JSON {
		return e.printJSON(res)
	}
	switch {
	case res.Held && res.Duplicate:
		fmt.Fprintf(e.stdout, "Already sent to %s as %s (same --client-id); it is still held for a person's approval.\n", res.To.Target, res.ID)
	case res.Held:
		fmt.Fprintf(e.stdout, "Message %s held for %s: it is delivered only if a person approves it (`intercom trace %s` tells).\n", res.ID, res.To.Target, res.ID)
	case res.Duplicate:
		fmt.Fprintf(e.stdout, "Already sent to %s as %s (same --client-id); not stored again.\n", res.To.Target, res.ID)
	case res.Queued:
		fmt.Fprintf(e.stdout, "Message %s queued for %s: the bridge link is down; it is stored here and forwarded when the link returns.\n", res.ID, res.To.Target)
	case res.Offline:
		fmt.Fprintf(e.stdout, "Message %s stored for %s, which is offline; it is delivered when the session resumes.\n", res.ID, res.To.Target)
	default:
		fmt.Fprintf(e.stdout, "Message %s sent to %s. This session can end its turn or continue independent work.\n", res.ID, res.To.Target)
	}
	if note := render.WakeHeldNote(res.WakeHeld, res.To.Target); note != "" {
		fmt.Fprintln(e.stdout, note)
	}
	return nil
}

func (s *SendCmd) request(e *env) (wire.SendRequest, error) {
	text, err := messageText(e, s.Message)
	if err != nil {
		return wire.SendRequest{}, err
	}
	att, err := s.attachments(text)
	if err != nil {
		return wire.SendRequest{}, err
	}
	if err := checkMessage(text, att); err != nil {
		return wire.SendRequest{}, err
	}
	delivery := s.Delivery
	if s.QueueMode != "" && delivery == "" { // --queue-mode implies queued delivery
		delivery = wire.DeliveryQueue
	}
	delivery, queueMode, err := wire.ParseDelivery(delivery, s.QueueMode, s.Thread, false, cliDeliveryFields)
	if err != nil {
		return wire.SendRequest{}, kongrun.Usage(err)
	}
	return wire.SendRequest{
		To: s.To, Text: text, Delivery: delivery, DeliverySet: s.Delivery != "",
		QueueMode: queueMode, Thread: s.Thread, ReplyTo: s.ReplyTo, Attachments: att, ClientMsgID: s.ClientID,
		ExpectsReply: s.Request && s.ReplyTo == "",
	}, nil
}

// cliDeliveryFields names the delivery flags in ParseDelivery's errors.
var cliDeliveryFields = wire.DeliveryFields{Delivery: "--delivery", QueueMode: "--queue-mode", Thread: "--thread"}
