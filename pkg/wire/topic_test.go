package wire

import (
	"strings"
	"testing"
)

func TestValidateTopicAccepts(t *testing.T) {
	t.Parallel()
	for _, topic := range []string{
		"T",
		"a",
		"0",
		"browser/shared-profile/tab-4",
		"repo/api/migrations",
		"Repo.API:v2_1-x",
		"a/b/c/d",
		"a.b",
		"x/.y", // segments may start with punctuation after the first character
		strings.Repeat("t", 200),
		"a/" + strings.Repeat("b", 198),
	} {
		if err := ValidateTopic(topic); err != nil {
			t.Errorf("ValidateTopic(%q) = %v, want nil", topic, err)
		}
	}
}

func TestValidateTopicRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		topic string
		want  string // substring of the error
	}{
		{"", "empty"},
		{strings.Repeat("t", 201), "longer than 200"},
		{strings.Repeat("t", 300), "longer than 200"},
		{"*", "wildcards"},
		{">", "wildcards"},
		{"x/*", "wildcards"},
		{"x/>", "wildcards"},
		{"x.*.y", "wildcards"},
		{"a*b", "wildcards"},
		{"a b", "no spaces"},
		{" a", "no spaces"},
		{"a ", "no spaces"},
		{"a\tb", "no spaces"},
		{"a\nb", "no spaces"},
		{"a\x00b", "no spaces"},
		{"x//y", "no empty segments"},
		{"x/", "no empty segments"},
		{"/x", "invalid topic"},
		{"-x", "invalid topic"},
		{".x", "invalid topic"},
		{"@x", "invalid topic"},
		{"a#b", "invalid topic"},
		{"a\\b", "invalid topic"},
		{"a,b", "invalid topic"},
		{"é", "invalid topic"},
		{"tab-4/é", "invalid topic"},
	}
	for _, c := range cases {
		err := ValidateTopic(c.topic)
		if err == nil {
			t.Errorf("ValidateTopic(%q) = nil, want an error", c.topic)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "invalid topic") || !strings.Contains(msg, c.want) {
			t.Errorf("ValidateTopic(%q) = %q, want an \"invalid topic\" error mentioning %q", c.topic, msg, c.want)
		}
	}
}

// Errors are shown as one line by the CLI: they must not embed a raw newline
// or an unbounded copy of the input.
func TestValidateTopicErrorIsOneShortLine(t *testing.T) {
	t.Parallel()
	for _, topic := range []string{"a\nb", strings.Repeat("x", 5000), "x/" + strings.Repeat("*", 500), "a b\r\nc"} {
		err := ValidateTopic(topic)
		if err == nil {
			t.Fatalf("ValidateTopic(%.20q) accepted", topic)
		}
		msg := err.Error()
		if strings.ContainsAny(msg, "\n\r") {
			t.Errorf("ValidateTopic(%.20q) error has a line break: %q", topic, msg)
		}
		if len(msg) > 400 {
			t.Errorf("ValidateTopic(%.20q) error is %d bytes long", topic, len(msg))
		}
	}
}

// topic@host names a topic on a bridged host: both parts are checked.
func TestValidateTopicRemoteHost(t *testing.T) {
	t.Parallel()
	for _, topic := range []string{"repo/api@host-1", "T@h", "a/b.c@build.example"} {
		if err := ValidateTopic(topic); err != nil {
			t.Errorf("ValidateTopic(%q) = %v, want nil", topic, err)
		}
	}
	for _, topic := range []string{"repo/api@", "repo/api@Bad_Host", "@host", "a b@host", "x/*@host", "x//y@host", "a@b@host", "repo@host/x"} {
		err := ValidateTopic(topic)
		if err == nil {
			t.Errorf("ValidateTopic(%q) = nil, want an error", topic)
		} else if !strings.HasPrefix(err.Error(), "invalid topic") {
			t.Errorf("ValidateTopic(%q) = %q, want an \"invalid topic\" error", topic, err)
		}
	}
}

func TestValidateTopicBoundary(t *testing.T) {
	t.Parallel()
	if err := ValidateTopic(strings.Repeat("a", 200)); err != nil {
		t.Fatalf("200 characters: %v", err)
	}
	if err := ValidateTopic(strings.Repeat("a", 201)); err == nil {
		t.Fatal("201 characters accepted")
	}
}
