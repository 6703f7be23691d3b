package reservations

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestToolPaths(t *testing.T) {
	cases := []struct {
		tool, input string
		want        []string
	}{
		{"Write", `{"file_path":"/r/a.go","content":"x"}`, []string{"/r/a.go"}},
		{"Edit", `{"file_path":"b.go","old_string":"a","new_string":"b"}`, []string{"b.go"}},
		{"NotebookEdit", `{"notebook_path":"n.ipynb"}`, []string{"n.ipynb"}},
		{"edit", `{"path":"c.go"}`, []string{"c.go"}},
		{"apply_patch", `{"command":"*** Begin Patch\n*** Update File: src/x.go\n@@\n-a\n+b\n*** Add File: y.go\n+z\n*** End Patch"}`, []string{"src/x.go", "y.go"}},
		{"apply_patch", `"*** Begin Patch\n*** Delete File: old.go\n*** End Patch"`, []string{"old.go"}},
		{"Bash", `{"command":"echo hi > notes.md && cat a | tee -a log.txt"}`, []string{"notes.md", "log.txt"}},
		{"Bash", `{"command":"sed -i 's/a/b/' x.go y.go; mv tmp z.go"}`, []string{"x.go", "y.go", "z.go"}},
		{"Bash", `{"command":"go test ./... 2>&1 >/dev/null"}`, nil},
		{"exec_command", `{"command":["bash","-lc","printf x >> out.txt"]}`, []string{"out.txt"}},
		{"Read", `{"file_path":"a.go"}`, nil},
		// Gemini CLI
		{"write_file", `{"file_path":"/r/g.go","content":"x"}`, []string{"/r/g.go"}},
		{"replace", `{"file_path":"g.go","old_string":"a","new_string":"b"}`, []string{"g.go"}},
		{"run_shell_command", `{"command":"printf x > held.txt"}`, []string{"held.txt"}},
		{"read_file", `{"file_path":"g.go"}`, nil},
		// OpenCode
		{"write", `{"filePath":"/r/o.go","content":"x"}`, []string{"/r/o.go"}},
		{"edit", `{"filePath":"o.go","oldString":"a","newString":"b"}`, []string{"o.go"}},
		{"multiedit", `{"filePath":"m.go","edits":[]}`, []string{"m.go"}},
		{"apply_patch", `{"patchText":"*** Begin Patch\n*** Update File: p.go\n*** End Patch"}`, []string{"p.go"}},
		{"patch", `{"patchText":"*** Begin Patch\n*** Add File: q.go\n+x\n*** End Patch"}`, []string{"q.go"}},
		{"read", `{"filePath":"o.go"}`, nil},
	}
	for _, c := range cases {
		got := ToolPaths(c.tool, []byte(c.input))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ToolPaths(%s, %s) = %q, want %q", c.tool, c.input, got, c.want)
		}
	}
}

// Every tool a hook matcher names is one ToolPaths reads.
func TestMatcherNamesToolsWithPaths(t *testing.T) {
	if got := Matcher("gemini"); got != "write_file|replace|run_shell_command" {
		t.Errorf("Matcher(gemini) = %q", got)
	}
	for harness, tools := range EditTools {
		for _, tool := range tools {
			in := `{"file_path":"a","filePath":"a","path":"a","command":"touch a","patchText":"*** Add File: a"}`
			if got := ToolPaths(tool, []byte(in)); len(got) == 0 {
				t.Errorf("%s tool %s: ToolPaths reads no path", harness, tool)
			}
		}
	}
}

func TestDenyOutputPerHarness(t *testing.T) {
	var gem map[string]string
	if err := json.Unmarshal(DenyOutput("gemini", "held"), &gem); err != nil || gem["decision"] != "deny" || gem["reason"] != "held" {
		t.Errorf("gemini deny = %v (%v)", gem, err)
	}
	if out := string(DenyOutput("claude", "held")); !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, `"permissionDecisionReason":"held"`) {
		t.Errorf("claude deny = %s", out)
	}
}
