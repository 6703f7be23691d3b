package ui

import "strings"

// holdsLabel is " · holds a.go, docs/**" for a session holding leases.
func (m *Model) holdsLabel(sid string) string {
	if len(m.holds[sid]) == 0 {
		return ""
	}
	return " · holds " + strings.Join(m.holds[sid], ", ")
}
