package mcpserver

import (
	"errors"
	"slices"
	"testing"

	"github.com/intercom-dev/intercom/internal/bounded"

	"github.com/intercom-dev/intercom/internal/testenv"
)

func TestAttachmentsBoundedAndNamed(t *testing.T) {
	sparse := testenv.SparseFile(t, 10<<30)
	for _, p := range []string{"/dev/zero", sparse} {
		if _, err := attachments([]Attachment{{Type: "file", Path: p}}); !errors.Is(err, bounded.ErrTooLarge) {
			t.Errorf("file attachment %s: got %v, want a too-large error", p, err)
		}
	}
	// The schema requires only type: a context without name is accepted.
	got, err := attachments([]Attachment{{Type: "context", Content: "ctx"}, {Type: "snippet", Content: "x"}, {Type: "file", Path: "/etc/hostname"}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Name != "context" || got[1].Name != "snippet" || got[2].Name != "hostname" {
		t.Errorf("names %q %q %q, want context, snippet, hostname", got[0].Name, got[1].Name, got[2].Name)
	}
}

func TestToolSchemaEnums(t *testing.T) {
	s, err := toolSchema()
	if err != nil {
		t.Fatal(err)
	}
	for prop, want := range map[string]string{"action": "reply", "delivery": "passive", "queueMode": "stack", "scope": "all"} {
		if !slices.Contains(s.Properties[prop].Enum, any(want)) {
			t.Errorf("%s enum %v lacks %q", prop, s.Properties[prop].Enum, want)
		}
	}
	att := s.Properties["attachments"].Items
	if !slices.Equal(att.Required, []string{"type"}) {
		t.Errorf("attachment requires %v, want only type", att.Required)
	}
	c, err := contactSchema()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Properties["reason"].Enum) != 3 {
		t.Errorf("contact reason enum %v", c.Properties["reason"].Enum)
	}
}
