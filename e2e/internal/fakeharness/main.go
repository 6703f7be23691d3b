// Command fakeharness stands in for an agent harness in e2e tests, with
// the process layout of the real ones (docs/agents.md): hook commands run
// through /bin/sh -c, the MCP server is a direct child speaking on the
// harness's own stdin/stdout, shell-tool commands run through /bin/bash -c.
// The test drives it with one JSON request per line on fd 3 and reads one
// JSON answer per line on fd 4; it exits when fd 3 closes.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

type request struct {
	Op    string   `json:"op"` // hook, bash or mcp
	Args  []string `json:"args,omitempty"`
	Stdin string   `json:"stdin,omitempty"`
	Env   []string `json:"env,omitempty"`
}

type answer struct {
	Code   int    `json:"code"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Pid    int    `json:"pid,omitempty"`
	Err    string `json:"err,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.NewFile(3, "requests"))
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.NewFile(4, "answers"))
	var mcp *exec.Cmd
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			_ = out.Encode(answer{Err: err.Error()})
			continue
		}
		var a answer
		switch r.Op {
		case "hook": // like Claude Code: /bin/sh -c '<command line>'
			a = run(exec.Command("/bin/sh", "-c", strings.Join(quote(r.Args), " ")), r)
		case "bash": // like the Bash tool: /bin/bash -c '<script>'
			a = run(exec.Command("/bin/bash", "-c", strings.Join(r.Args, " ")), r)
		case "mcp": // a direct child on the harness's own stdio
			mcp = exec.Command(r.Args[0], r.Args[1:]...)
			mcp.Env = append(os.Environ(), r.Env...)
			mcp.Stdin, mcp.Stdout, mcp.Stderr = os.Stdin, os.Stdout, os.Stderr
			if err := mcp.Start(); err != nil {
				a.Err = err.Error()
			} else {
				a.Pid = mcp.Process.Pid
			}
		default:
			a.Err = fmt.Sprintf("unknown op %q", r.Op)
		}
		_ = out.Encode(a)
	}
	if mcp != nil {
		_ = mcp.Wait()
	}
}

func run(cmd *exec.Cmd, r request) answer {
	cmd.Env = append(os.Environ(), r.Env...)
	cmd.Stdin = strings.NewReader(r.Stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	a := answer{Stdout: o.String(), Stderr: e.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		a.Code = ee.ExitCode()
	case err != nil:
		a.Err = err.Error()
	}
	return a
}

func quote(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}
