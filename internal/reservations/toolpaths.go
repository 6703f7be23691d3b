package reservations

import (
	"encoding/json"
	"strings"
)

// EditTools are the file-editing tools of each harness whose calls a
// reservation blocks, as the pre-tool hooks' matchers name them.
var EditTools = map[string][]string{
	"claude": {"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"},
	"codex":  {"apply_patch", "Edit", "Write", "Bash", "shell", "exec_command"},
	"pi":     {"write", "edit", "bash"},
	"gemini": {"write_file", "replace", "run_shell_command"},
	// OpenCode's plugin checks these itself (tool.execute.before).
	"opencode": {"write", "edit", "multiedit", "patch", "apply_patch", "bash"},
}

// Matcher is the pre-tool hook matcher of harness: its edit tools.
func Matcher(harness string) string { return strings.Join(EditTools[harness], "|") }

// ToolPaths returns the paths a tool call would write, as given (absolute,
// or relative to the harness's working directory): the file of Write,
// Edit, MultiEdit and NotebookEdit (Claude Code), write and edit (Pi),
// write_file and replace (Gemini CLI), write, edit and multiedit
// (OpenCode's filePath); every file an apply_patch (Codex, OpenCode) or
// patch (OpenCode) adds, updates, deletes or moves to;
// and, best effort, what a shell command visibly writes (shellTargets).
// Other tools write nothing it knows of.
func ToolPaths(tool string, input json.RawMessage) []string {
	var in struct {
		FilePath      string `json:"file_path"`
		FilePathCamel string `json:"filePath"` // OpenCode's
		NotebookPath  string `json:"notebook_path"`
		Path          string `json:"path"`
		Command       any    `json:"command"` // a string, or Codex's argv array
		Cmd           string `json:"cmd"`     // Codex's exec_command
		Patch         string `json:"patch"`
		PatchText     string `json:"patchText"` // OpenCode's
		Input         string `json:"input"`
	}
	if len(input) > 0 && input[0] == '"' { // a freeform tool's input is its text
		var s string
		if json.Unmarshal(input, &s) == nil {
			in.Input = s
		}
	} else {
		_ = json.Unmarshal(input, &in)
	}
	command := commandText(in.Command)
	if command == "" {
		command = in.Cmd
	}
	switch strings.ToLower(tool) {
	case "write", "edit", "multiedit", "write_file", "replace":
		return nonEmpty(in.FilePath, in.FilePathCamel, in.Path)
	case "notebookedit":
		return nonEmpty(in.NotebookPath, in.FilePath)
	case "apply_patch", "patch":
		for _, text := range []string{in.Patch, in.PatchText, in.Input, command} {
			if p := PatchPaths(text); len(p) > 0 {
				return p
			}
		}
		return nil
	case "bash", "shell", "exec_command", "run_shell_command":
		if p := PatchPaths(command); len(p) > 0 { // Codex may route a patch through its shell
			return p
		}
		return shellTargets(command)
	}
	return nil
}

func commandText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			if s, ok := p.(string); ok {
				parts = append(parts, s)
			}
		}
		// ["bash", "-lc", "script"]: the script is the last word.
		if len(parts) >= 3 && (parts[1] == "-lc" || parts[1] == "-c") {
			return parts[len(parts)-1]
		}
		return strings.Join(parts, " ")
	}
	return ""
}

func nonEmpty(ss ...string) []string {
	for _, s := range ss {
		if s != "" {
			return []string{s}
		}
	}
	return nil
}

// PatchPaths returns the files a patch in Codex's apply_patch format
// touches ("*** Add File: P", "*** Update File: P", "*** Delete File: P",
// "*** Move to: P").
func PatchPaths(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		for _, h := range []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"} {
			if p, ok := strings.CutPrefix(line, h); ok && strings.TrimSpace(p) != "" {
				out = append(out, strings.TrimSpace(p))
			}
		}
	}
	return out
}

// shellTargets is the best-effort reading of a shell command: the targets
// of output redirections (> and >>, not >&N), the file arguments of tee,
// touch, rm, sed -i and perl -i, and the last argument of cp, mv and
// install. Anything computed (variables, globs the shell expands,
// subshells, eval, scripts, interpreters writing files themselves) is not
// seen.
func shellTargets(cmd string) []string {
	var out []string
	for _, seg := range splitCommands(cmd) {
		words := strings.Fields(seg)
		var args []string
		for i := 0; i < len(words); i++ {
			w := words[i]
			if t, ok := redirectTarget(w); ok {
				if t == "" && i+1 < len(words) {
					i++
					t = words[i]
				}
				if t != "" && !strings.HasPrefix(t, "&") {
					out = append(out, unquote(t))
				}
				continue
			}
			args = append(args, w)
		}
		out = append(out, commandTargets(args)...)
	}
	var kept []string
	for _, p := range out {
		if p != "" && p != "/dev/null" && !strings.ContainsAny(p, "$`(") {
			kept = append(kept, p)
		}
	}
	return kept
}

// redirectTarget reads an output redirection word: ">f", ">>f", "2>f",
// or a bare ">" (the target is the next word, returned as "").
func redirectTarget(w string) (string, bool) {
	w = strings.TrimLeft(w, "0123456789&")
	if !strings.HasPrefix(w, ">") {
		return "", false
	}
	w = strings.TrimLeft(w, ">|")
	return w, true
}

func commandTargets(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	name := args[0]
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	var files []string
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			files = append(files, unquote(a))
		}
	}
	switch name {
	case "tee", "touch", "rm", "truncate":
		return files
	case "cp", "mv", "install", "ln":
		if len(files) >= 2 {
			return files[len(files)-1:]
		}
	case "sed", "perl":
		for _, a := range args[1:] {
			if strings.HasPrefix(a, "-i") || a == "--in-place" || strings.HasPrefix(a, "-pi") {
				if len(files) > 1 {
					return files[1:] // the first is the script
				}
			}
		}
	}
	return nil
}

// splitCommands splits a command line at ;, &&, || and | (outside quotes,
// roughly: quotes are not nested).
func splitCommands(cmd string) []string {
	var out []string
	var cur strings.Builder
	quote := rune(0)
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for _, r := range cmd {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote = r
			cur.WriteRune(r)
		case r == ';' || r == '\n' || r == '|' || r == '&':
			if r == '&' && strings.HasSuffix(cur.String(), ">") { // >& is a redirection
				cur.WriteRune(r)
				continue
			}
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

func unquote(s string) string { return strings.Trim(s, `'"`) }
