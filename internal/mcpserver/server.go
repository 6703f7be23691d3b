// Package mcpserver is `intercom mcp`: an MCP stdio server (official Go
// SDK) exposing the `intercom` tool (pi-intercom's) and, inside a supervised
// run, `contact_supervisor`. Under an agent harness (Claude Code, Codex,
// Gemini CLI) it acts as the agent's one session, shared with its hooks and shell commands
// (package agentsession); under any other MCP client it holds a session of
// its own. Either way nothing is registered before the first tool call, so
// a health check that only starts and closes the server leaves no session.
//
// Results are text only. Claude Code and Codex hand the model a result's
// structuredContent instead of its text when it has one, so the full human
// rendering (messages, reply hints, errors) is the text and there is no
// structuredContent. Messages that arrived for the session are appended to
// the next result and acknowledged with it, unless the harness's hooks
// deliver them (Claude Code's PostToolUse and Gemini CLI's AfterTool run after
// every tool call).
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

	"github.com/intercom-dev/intercom/internal/agentsession"
	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/proctree"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Options configure the server.
type Options struct {
	Client  *intercom.Client
	Name    string // session name ("" = the agent's, or an alias)
	Session string // act as this session id (its own, held here), if set
	// Harness is claude, codex or gemini when the harness says so (install
	// passes --harness); "" guesses from the environment.
	Harness string
	Config  config.Config
	Version string
	Log     *slog.Logger
	// Child, when non-nil, enables contact_supervisor.
	Child ContactFunc
}

// ContactFunc runs contact_supervisor for a child.
type ContactFunc func(ctx context.Context, reason, message string, interview map[string]any) (text string, structured map[string]any, err error)

// resultLimit bounds the inbound messages one tool result carries.
const resultLimit = 20000

// Server is one MCP connection's state.
type Server struct {
	opts   Options
	agents agentsession.Agents

	mu      sync.Mutex
	own     *intercom.Session // held here when not an agent's session
	harness *proctree.Proc    // the agent harness, when there is one
	idleT   *time.Timer
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
	s := &Server{opts: opts, agents: agentsession.Open(opts.Client.Home())}
	srv := mcp.NewServer(&mcp.Implementation{Name: "intercom", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "intercom lets you find and message the other agent sessions on this machine. Use the intercom tool: list, send (steer by default), ask (blocks for a reply), reply, pending, status, and quiet topics (subscribe, publish, topics).",
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "intercom", Description: mcpToolDescription, InputSchema: toolIn}, s.handle)
	if opts.Child != nil {
		mcp.AddTool(srv, &mcp.Tool{Name: "contact_supervisor", Description: ContactDescription, InputSchema: contactIn}, s.contact)
	}
	err = srv.Run(ctx, t)
	s.mu.Lock()
	own := s.own
	s.mu.Unlock()
	if own != nil {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = own.Detach(dctx)
		cancel()
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// agentHarness returns the agent harness this server runs under, if any:
// a harness named by --harness or Claude Code's environment, or one whose
// hooks bound it already.
func (s *Server) agentHarness() (*proctree.Proc, string) {
	if s.opts.Session != "" {
		return nil, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	kind := s.opts.Harness
	if kind == "" && os.Getenv(agentsession.ClaudeSessionEnv) != "" {
		kind = "claude"
	}
	if s.harness == nil {
		p, err := agentsession.Harness()
		if err != nil {
			return nil, ""
		}
		b, bound := s.agents.Load(p)
		if kind == "" && !bound {
			return nil, "" // an MCP client that is no agent harness
		}
		if kind == "" {
			kind = b.Harness
		}
		s.harness = &p
	}
	return s.harness, kind
}

// session returns the session this server acts as, registering it on first
// use, and whether tool results should carry its inbound messages.
func (s *Server) session(ctx context.Context) (string, bool, error) {
	if p, kind := s.agentHarness(); p != nil {
		cwd, _ := os.Getwd()
		b, err := s.agents.Join(ctx, s.opts.Client, s.opts.Client.Home(), *p, agentsession.Request{Harness: kind, Name: s.opts.Name, Cwd: cwd})
		if err != nil {
			return "", false, fmt.Errorf("join the agent's session: %w", err)
		}
		return b.Session, !(b.Hooks && hooksSeeMCPTools(b.Harness)), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own == nil {
		sess, err := s.opts.Client.Attach(ctx, intercom.AttachOptions{Name: s.opts.Name, RequestID: s.opts.Session, Status: "idle", NoDeliver: true})
		if err != nil {
			return "", false, fmt.Errorf("register MCP session: %w", err)
		}
		s.own = sess
	}
	return s.own.ID(), true, nil
}

// hooksSeeMCPTools reports whether harness runs its after-tool hook for MCP
// tools too (Claude Code's PostToolUse, Gemini CLI's AfterTool): its hooks
// then deliver at those boundaries, and tool results need not.
func hooksSeeMCPTools(harness string) bool { return harness == "claude" || harness == "gemini" }

// busy reports the session as working while tools are called, and idle
// after a quiet period (only where no hooks report the agent's state).
func (s *Server) busy(ctx context.Context, sid, tool string) {
	_, _ = s.opts.Client.SetState(ctx, sid, "tool:"+tool, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idleT != nil {
		s.idleT.Stop()
	}
	s.idleT = time.AfterFunc(30*time.Second, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = s.opts.Client.SetState(ctx, sid, "idle", nil)
	})
}

// result is a tool result of text, with the session's waiting messages
// appended (and acknowledged) when this server delivers them.
func (s *Server) result(ctx context.Context, sid string, deliver bool, text string, isErr bool) *mcp.CallToolResult {
	if deliver {
		_, err := s.agents.Deliver(ctx, s.opts.Client, sid, agentsession.DeliverOptions{Render: s.render, Limit: resultLimit, Budget: int(s.opts.Config.DigestBytes)},
			func(inbound string) error {
				text = strings.TrimRight(text, "\n") + "\n\n" + inbound
				return nil
			})
		if err != nil {
			s.opts.Log.Warn("deliver inbound messages", "err", err)
		}
	}
	return &mcp.CallToolResult{IsError: isErr, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func (s *Server) render(m wire.Message) string { return render.ForAgent(m, s.opts.Config.ReplyHint) }
