package ui

import "charm.land/lipgloss/v2"

// styles are the few looks the UI uses. With NO_COLOR every style is plain:
// selection and highlights are then carried by text markers alone (▸, !, *),
// which are always drawn, so nothing depends on colour.
type styles struct {
	title    lipgloss.Style
	tabOn    lipgloss.Style
	tabOff   lipgloss.Style
	header   lipgloss.Style
	selected lipgloss.Style
	dim      lipgloss.Style
	ask      lipgloss.Style
	unread   lipgloss.Style
	err      lipgloss.Style
	ok       lipgloss.Style
	help     lipgloss.Style
	mode     lipgloss.Style
}

func newStyles(noColor bool) styles {
	if noColor {
		p := lipgloss.NewStyle()
		return styles{p, p, p, p, p, p, p, p, p, p, p, p}
	}
	return styles{
		title:    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12")),
		tabOn:    lipgloss.NewStyle().Bold(true).Reverse(true),
		tabOff:   lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		header:   lipgloss.NewStyle().Bold(true).Underline(true),
		selected: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("14")),
		dim:      lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		ask:      lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11")),
		unread:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("10")),
		err:      lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		ok:       lipgloss.NewStyle().Foreground(lipgloss.Color("10")),
		help:     lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		mode:     lipgloss.NewStyle().Bold(true).Reverse(true),
	}
}
