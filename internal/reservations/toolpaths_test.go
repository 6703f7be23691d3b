package reservations

import (
	"reflect"
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
	}
	for _, c := range cases {
		got := ToolPaths(c.tool, []byte(c.input))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ToolPaths(%s, %s) = %q, want %q", c.tool, c.input, got, c.want)
		}
	}
}
