// Package runs keeps supervised child runs and their durable questions on
// disk under INTERCOM_HOME/runs/<run-id>/: the launch contract and state
// (run.json), the child's output (output.log) and each question with its
// answer (questions/<qid>/question.json, answer.json). Every write is
// atomic and fsync'd, so a crash of the child, its owner, the supervisor or
// the broker loses no question and no answer.
//
// It also holds the workflows of supervision, which the command lines only
// call: a child's side (Contact: Reach the supervisor, Progress, Ask and
// wait for the answer), the supervisor's (Desk: Answer, Continue, reviving
// an exited child), the child's environment (ChildEnv, ChildFromEnv) and
// the launch of a run's detached owner (OwnerLauncher).
package runs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/lazyre"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/internal/runenv"
)

// Run states.
const (
	StateStarting  = "starting"
	StateRunning   = "running"
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateStopped   = "stopped"
)

// Errors callers branch on.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("a different answer is already saved")
)

// Run is run.json: the launch contract and what became of it.
type Run struct {
	ID             string    `json:"id"`
	Agent          string    `json:"agent"`
	Index          int       `json:"index"`
	Supervisor     string    `json:"supervisor"` // session id
	SupervisorName string    `json:"supervisor_name"`
	ChildSession   string    `json:"child_session"`    // name
	ChildSessionID string    `json:"child_session_id"` // id
	Cmd            string    `json:"cmd"`
	Args           []string  `json:"args"`
	Cwd            string    `json:"cwd"`
	EnvKeys        []string  `json:"env_keys"`
	Env            []string  `json:"env,omitempty"` // omitted from --json output
	Wait           bool      `json:"wait"`
	OutputPath     string    `json:"output_path"`
	State          string    `json:"state"`
	ExitCode       *int      `json:"exit_code,omitempty"`
	OwnerPid       int       `json:"owner_pid,omitempty"`
	ChildPid       int       `json:"child_pid,omitempty"`
	StopRequested  bool      `json:"stop_requested,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	StartedAt      time.Time `json:"started_at,omitzero"`
	EndedAt        time.Time `json:"ended_at,omitzero"`
	AnswerFile     string    `json:"answer_file,omitempty"` // given to a revived child
	RevivedFrom    string    `json:"revived_from,omitempty"`
	RevivedTo      string    `json:"revived_to,omitempty"`
	Error          string    `json:"error,omitempty"`
	// The --on-stuck ladder (stall.go): its steps, the stall now, what
	// happened, and how often the child was restarted.
	OnStuck  []string `json:"on_stuck,omitempty"`
	Stall    *Stall   `json:"stall,omitempty"`
	History  []Event  `json:"history,omitempty"`
	Restarts int      `json:"restarts,omitempty"`
}

// Finished reports whether the run has ended.
func (r *Run) Finished() bool {
	return r.State == StateCompleted || r.State == StateFailed || r.State == StateStopped
}

// Files are the runs directory: each run's run.json, its questions and
// their answers, every file written atomically.
type Files struct{ Dir string }

// NewID returns a new run id: 8 hex digits, as pi-intercom's.
func NewID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidID checks a run id or question id (runenv.ValidID).
func ValidID(id string) error { return runenv.ValidID(id) }

// RunDir is the directory of a run.
func (s Files) RunDir(id string) string { return filepath.Join(s.Dir, id) }

func (s Files) runFile(id string) string { return filepath.Join(s.RunDir(id), "run.json") }
func (s Files) lockFile(id string) string {
	return filepath.Join(s.RunDir(id), "lock")
}

// Create writes a new run directory and run.json.
func (s Files) Create(r *Run) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create runs dir: %w", err)
	}
	if err := os.Mkdir(s.RunDir(r.ID), 0o700); err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	if err := os.Mkdir(filepath.Join(s.RunDir(r.ID), "questions"), 0o700); err != nil {
		return err
	}
	r.OutputPath = filepath.Join(s.RunDir(r.ID), "output.log")
	return writeJSON(s.runFile(r.ID), r)
}

// Load reads run.json.
func (s Files) Load(id string) (*Run, error) {
	if err := ValidID(id); err != nil {
		return nil, fmt.Errorf("run %q: %w", id, ErrNotFound)
	}
	var r Run
	if err := readJSON(s.runFile(id), &r); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
		}
		return nil, err
	}
	return &r, nil
}

// Update changes run.json under the run's lock.
func (s Files) Update(id string, fn func(*Run) error) (*Run, error) {
	var out *Run
	err := withLock(s.lockFile(id), func() error {
		r, err := s.Load(id)
		if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
		out = r
		return writeJSON(s.runFile(id), r)
	})
	return out, err
}

// List returns every run, newest first.
func (s Files) List() ([]*Run, error) {
	out, err := loadEach(s.Dir, s.Load)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// ChildName is the child's session name: subagent-<agent>-<run>[-<index+1>],
// each part lowercased with runs of other characters turned into '-'.
func ChildName(agent, run string, index int, indexed bool) string {
	clean := func(s string) string {
		s = strings.Trim(nonName().ReplaceAllString(strings.ToLower(s), "-"), "-")
		return s
	}
	a := clean(agent)
	if a == "" {
		a = "agent"
	}
	name := "subagent-" + a + "-" + clean(run)
	if indexed {
		name += fmt.Sprintf("-%d", index+1)
	}
	if len(name) > 64 {
		name = name[:64]
	}
	return strings.TrimRight(name, "-")
}

var nonName = lazyre.New(`[^a-z0-9_-]+`)

// Open is the store of the runs under the state directory home.
func Open(home string) Files { return Files{Dir: paths.Layout{Home: home}.RunsDir()} }
