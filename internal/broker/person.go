package broker

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/intercom-dev/intercom/internal/proctree"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Who is a person: the broker marks a message FromPerson when its sender's
// connection comes from a process that is no agent's — `intercom ui` or a
// command typed in a terminal. Nothing in a request sets the mark; the
// broker looks at the process behind the connection (the pid its socket's
// peer credentials named, gateway.PeerPid) and finds an agent when:
//
//   - the process or one of its ancestors is a harness bound to a session
//     (INTERCOM_HOME/agents/<pid>-<start>.json, package agentsession) or
//     runs a harness program (claude, codex, gemini, opencode, pi);
//   - the process was started with a harness's environment (agentEnv):
//     an agent's shell commands inherit it, even once detached;
//   - the sending session is bound to a harness (an agent's session used
//     with --session from elsewhere).
//
// A session of a bridged host never carries the mark (the remote side's
// word is not trusted), nor does a connection the gateway did not splice.

// agentEnv are variables harnesses and intercom's agent launchers set for
// the commands their agents run.
var agentEnv = []string{
	"CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_EXECPATH", "CLAUDE_CODE_ENTRYPOINT",
	"CODEX_THREAD_ID", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_MANAGED_BY_NPM",
	"GEMINI_CLI", "OPENCODE", "OPENCODE_PID",
	"PI_SUBAGENT_RUN_ID", "PI_CODING_AGENT",
	"INTERCOM_SESSION", "INTERCOM_HARNESS_PID", "INTERCOM_SUPERVISOR", "INTERCOM_RUN_ID",
}

// harnessPrograms are the command names of harness processes.
var harnessPrograms = []string{"claude", "codex", "gemini", "opencode", "pi"}

// personKey is one sending session on one connection.
type personKey struct {
	cid     uint64
	session string
}

// personTable caches verdicts per connection and session: a connection's
// process does not change, and its client id is never reused. Entries of
// closed connections are dropped when the table doubles (prune).
type personTable struct {
	mu      sync.Mutex
	verdict map[personKey]bool
	limit   int // prune when the table reaches this size
}

// minPersonLimit is the smallest size at which the table is pruned.
const minPersonLimit = 1024

// fromPerson reports whether messages of session sid, sent over NATS
// connection cid, carry the person mark.
func (b *Broker) fromPerson(cid uint64, sid, host string) bool {
	if host != "" || cid == 0 || b.gw == nil {
		return false
	}
	pid, ok := b.gw.PeerPid(cid)
	t := &b.persons
	key := personKey{cid, sid}
	t.mu.Lock()
	if !ok { // closed: drop what was cached for it
		for k := range t.verdict {
			if k.cid == cid {
				delete(t.verdict, k)
			}
		}
		t.mu.Unlock()
		return false
	}
	v, cached := t.verdict[key]
	t.mu.Unlock()
	if cached {
		return v
	}
	agents := filepath.Join(b.opts.Layout.Home, "agents")
	v = personProcess(agents, pid) && !sessionBound(agents, sid)
	t.mu.Lock()
	if t.verdict == nil {
		t.verdict, t.limit = map[personKey]bool{}, minPersonLimit
	}
	t.verdict[key] = v
	if len(t.verdict) >= t.limit {
		for k := range t.verdict {
			if _, open := b.gw.PeerPid(k.cid); !open {
				delete(t.verdict, k)
			}
		}
		t.limit = max(minPersonLimit, 2*len(t.verdict))
	}
	t.mu.Unlock()
	return v
}

// markPersons sets Person on the rows of connected local sessions held by
// a person's process.
func (b *Broker) markPersons(rows []wire.Session) {
	for i := range rows {
		if rows[i].Host != "" || !rows[i].Connected {
			continue
		}
		if s, ok := b.sessions.get(rows[i].ID); ok {
			rows[i].Person = b.fromPerson(s.cid, s.ID, s.Host)
		}
	}
}

// personProcess reports whether process pid is a person's: readable, with
// no agent's environment and no harness (bound or by name) among itself
// and its ancestors. agents is the bindings directory.
func personProcess(agents string, pid int) bool {
	self, err := proctree.Get(pid)
	if err != nil {
		return false
	}
	env, err := proctree.Environ(pid)
	if err != nil && !errors.Is(err, proctree.ErrUnsupported) { // off Linux: ancestry only
		return false
	}
	for _, name := range env {
		if slices.Contains(agentEnv, name) {
			return false
		}
	}
	for _, p := range append([]proctree.Proc{self}, proctree.Ancestors(pid, 64)...) {
		if slices.Contains(harnessPrograms, p.Comm) {
			return false
		}
		if _, err := os.Stat(filepath.Join(agents, p.Key()+".json")); err == nil {
			return false
		}
	}
	return true
}

// sessionBound reports whether a harness binding in agents names session
// sid.
func sessionBound(agents, sid string) bool {
	ents, err := os.ReadDir(agents)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(agents, e.Name()))
		if err != nil {
			continue
		}
		var b struct {
			Session string `json:"session"`
		}
		if json.Unmarshal(data, &b) == nil && b.Session == sid {
			return true
		}
	}
	return false
}
