// Package mcpserver is `intercom mcp`: an MCP stdio server (official Go
// SDK) that holds one intercom session for the life of the MCP connection
// and exposes the reference's `intercom` tool and, inside a supervised run,
// `contact_supervisor`. Messages that arrive for the session are appended
// to the next tool result and acknowledged once that result is produced.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Options configure the server.
type Options struct {
	Client  *intercom.Client
	Name    string // session name ("" = alias)
	Session string // resume this session id, if set
	Config  config.Config
	Version string
	Log     *slog.Logger
	// Child, when non-nil, enables contact_supervisor.
	Child ContactFunc
}

// ContactFunc runs contact_supervisor for a child.
type ContactFunc func(ctx context.Context, reason, message string, interview map[string]any) (text string, structured map[string]any, err error)

// Server is one MCP connection's state.
type Server struct {
	opts  Options
	sess  *intercom.Session
	mu    sync.Mutex
	inbox []wire.Message
	idleT *time.Timer
}

// Run serves MCP on t until the client disconnects or ctx ends.
func Run(ctx context.Context, opts Options, t mcp.Transport) error {
	toolIn, err := toolSchema()
	if err != nil {
		return err
	}
	contactIn, err := contactSchema()
	if err != nil {
		return err
	}
	attach := intercom.AttachOptions{Name: opts.Name, Status: "idle"}
	if opts.Session != "" {
		attach.RequestID = opts.Session
	}
	sess, err := opts.Client.Attach(ctx, attach)
	if err != nil {
		return fmt.Errorf("register MCP session: %w", err)
	}
	s := &Server{opts: opts, sess: sess}
	go s.collect(ctx)
	srv := mcp.NewServer(&mcp.Implementation{Name: "intercom", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "intercom lets you find and message the other agent sessions on this machine. Use the intercom tool: list, send (steer by default), ask (blocks for a reply), reply, pending, status, and quiet topics (subscribe, publish, topics).",
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "intercom", Description: toolDescription, InputSchema: toolIn}, s.handle)
	if opts.Child != nil {
		mcp.AddTool(srv, &mcp.Tool{Name: "contact_supervisor", Description: contactDescription, InputSchema: contactIn}, s.contact)
	}
	err = srv.Run(ctx, t)
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = sess.Detach(dctx)
	cancel()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// SessionID is the held session's id.
func (s *Server) SessionID() string { return s.sess.ID() }

// collect keeps arriving messages until a tool result carries them.
func (s *Server) collect(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.sess.Messages():
			s.mu.Lock()
			s.inbox = append(s.inbox, m)
			s.mu.Unlock()
		}
	}
}

// busy reports the session as working while tools are called, and idle
// after a quiet period.
func (s *Server) busy(ctx context.Context, tool string) {
	_ = s.sess.SetState(ctx, "tool:"+tool, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idleT != nil {
		s.idleT.Stop()
	}
	s.idleT = time.AfterFunc(30*time.Second, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.sess.SetState(ctx, "idle", nil)
	})
}

// takeInbox removes and returns the collected messages.
func (s *Server) takeInbox() []wire.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.inbox
	s.inbox = nil
	return out
}

// withInbox appends collected messages to a result text and acks them.
func (s *Server) withInbox(ctx context.Context, text string, structured map[string]any) (*mcp.CallToolResult, map[string]any) {
	msgs := s.takeInbox()
	if len(msgs) > 0 {
		var b strings.Builder
		b.WriteString(text)
		fmt.Fprintf(&b, "\n\n%d new intercom message(s):\n", len(msgs))
		ids := make([]string, 0, len(msgs))
		for _, m := range msgs {
			b.WriteString(RenderMessage(m, s.opts.Config.ReplyHint))
			ids = append(ids, m.ID)
		}
		text = b.String()
		structured["inbound"] = msgs
		if err := s.sess.Ack(ctx, ids...); err != nil {
			s.opts.Log.Warn("ack", "err", err)
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, structured
}

// RenderMessage formats a message for an agent: sender and cwd, the reply
// hint for asks, then the body and attachments.
func RenderMessage(m wire.Message, replyHint bool) string {
	var b strings.Builder
	hint := ""
	if replyHint {
		hint = fmt.Sprintf("To reply, use the intercom tool: intercom({ action: \"reply\", to: %q, message: \"...\" })", m.ID)
	}
	render.Message(&b, m, hint)
	return b.String()
}

func errResult(err error) (*mcp.CallToolResult, map[string]any, error) {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, map[string]any{"error": err.Error()}, nil
}

// Environment of a supervised child.
func ChildVars() (supervisor, run, agent, index string, ok bool) {
	get := func(a, b string) string {
		if v := os.Getenv(a); v != "" {
			return v
		}
		return os.Getenv(b)
	}
	supervisor = get("INTERCOM_SUPERVISOR", "PI_SUBAGENT_ORCHESTRATOR_TARGET")
	run = get("INTERCOM_RUN_ID", "PI_SUBAGENT_RUN_ID")
	agent = get("INTERCOM_CHILD_AGENT", "PI_SUBAGENT_CHILD_AGENT")
	index = get("INTERCOM_CHILD_INDEX", "PI_SUBAGENT_CHILD_INDEX")
	return supervisor, run, agent, index, supervisor != "" && run != "" && agent != "" && index != ""
}
