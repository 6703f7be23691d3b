package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/intercom-dev/intercom/internal/codexapp"
	"github.com/intercom-dev/intercom/internal/install"
)

// runner runs the programs doctor starts, each with Options.Env and a
// timeout.
type runner struct {
	o *Options

	trustOnce sync.Once // Codex's hook trust is asked once for all scopes
	trust     []codexapp.Hook
	trustErr  error
}

// getenv reads the doctor environment (Options.Env).
func (r *runner) getenv(key string) string { return getenv(r.o.Env, key) }

func getenv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// lookPath finds an executable on the PATH of Options.Env ("" when none).
func (r *runner) lookPath(name string) string {
	if strings.Contains(name, "/") {
		if executable(name) == nil {
			return name
		}
		return ""
	}
	for _, dir := range filepath.SplitList(r.getenv("PATH")) {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); executable(p) == nil {
			return p
		}
	}
	return ""
}

// command is a program started with the doctor environment plus extra.
func (r *runner) command(ctx context.Context, bin string, args []string, extra map[string]string) *exec.Cmd {
	c := exec.CommandContext(ctx, bin, args...)
	c.Env = slices.Clone(r.o.Env)
	for k, v := range extra {
		c.Env = append(c.Env, k+"="+v)
	}
	if r.o.Dir != "" {
		c.Dir = r.o.Dir
	}
	c.WaitDelay = time.Second
	return c
}

// version runs `bin --version` and returns its first line.
func (r *runner) version(ctx context.Context, bin string) (string, error) {
	out, err := r.output(ctx, bin, "--version")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l, nil
		}
	}
	return "", fmt.Errorf("%s --version printed nothing", bin)
}

// output runs bin with args (and the timeout) and returns what it printed
// on stdout, or else on stderr (Codex warns on stderr before its version).
func (r *runner) output(ctx context.Context, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	c := r.command(ctx, bin, args, nil)
	var out, stderr tailBuffer
	c.Stdout, c.Stderr = &out, &stderr
	err := c.Run()
	what := strings.Join(append([]string{bin}, args...), " ")
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s: no answer in %s", what, r.o.Timeout)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v: %s", what, err, stderr.lastLine())
	}
	if s := out.String(); strings.TrimSpace(s) != "" {
		return s, nil
	}
	return stderr.String(), nil
}

// probeMCP starts the MCP server as the harness would (its command, args
// and env) and does the MCP initialize and tools/list handshake over stdio.
func (r *runner) probeMCP(ctx context.Context, s *install.MCPServer) (status, detail, fix string) {
	bin := s.Command
	if bin == "" {
		return Fail, "the intercom MCP server entry has no command", ""
	}
	if !strings.Contains(bin, "/") {
		if bin = r.lookPath(bin); bin == "" {
			return Fail, s.Command + " is not on PATH", ""
		}
	}
	if err := executable(bin); err != nil {
		return Fail, "its command is " + err.Error(), ""
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	c := r.command(ctx, bin, s.Args, s.Env)
	var stderr tailBuffer
	c.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "intercom-doctor", Version: r.o.Version}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: c, TerminateDuration: 2 * time.Second}, nil)
	what := strings.Join(append([]string{s.Command}, s.Args...), " ")
	failed := func(step string, err error) (string, string, string) {
		msg := fmt.Sprintf("`%s` did not answer %s: %v", what, step, err)
		if ctx.Err() != nil {
			msg = fmt.Sprintf("`%s` did not answer %s in %s", what, step, r.o.Timeout)
		}
		if l := stderr.lastLine(); l != "" {
			msg += " (stderr: " + l + ")"
		}
		return Fail, msg, ""
	}
	if err != nil {
		return failed("initialize", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return failed("tools/list", err)
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	server := "server"
	if info := cs.InitializeResult().ServerInfo; info != nil {
		server = strings.TrimSpace(info.Name + " " + info.Version)
	}
	if !slices.Contains(names, "intercom") {
		return Fail, fmt.Sprintf("%s answers but has no intercom tool (tools: %s)", server, strings.Join(names, ", ")), ""
	}
	return OK, fmt.Sprintf("%s answers; tools: %s", server, strings.Join(names, ", ")), ""
}

// tailBuffer keeps the first and last bytes a program printed.
type tailBuffer struct {
	mu   sync.Mutex
	head []byte
	tail []byte
}

const tailKeep = 4096

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := tailKeep - len(b.head); room > 0 {
		b.head = append(b.head, p[:min(room, len(p))]...)
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > tailKeep {
		b.tail = b.tail[len(b.tail)-tailKeep:]
	}
	return len(p), nil
}

// String is what was kept: all of it, or its first and last 4 KiB.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.head) < tailKeep {
		return string(b.head)
	}
	return string(b.head) + "\n…\n" + string(b.tail)
}

func (b *tailBuffer) lastLine() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := bytes.Split(bytes.TrimSpace(b.tail), []byte("\n"))
	return strings.TrimSpace(string(lines[len(lines)-1]))
}

// errNotObject: a settings file whose top level is not a JSON object.
var errNotObject = errors.New("not a JSON object")
