package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// Inbound modes: what a session does with a message from a sender.
const (
	InboundAccept = "accept" // stored and delivered (the default)
	InboundHold   = "hold"   // kept for a person to approve or refuse
	InboundRefuse = "refuse" // turned away at send; nothing is stored
)

// InboundRule is one session's inbound policy: its Mode, and Senders whose
// messages are treated otherwise (by sender name or id).
type InboundRule struct {
	Mode    string            `json:"mode"`
	Senders map[string]string `json:"senders,omitempty"`
}

// ModeFor is the mode for a message from a sender known by any of names
// (its name, its id); a sender exception wins over the session's mode
// (named true).
func (r InboundRule) ModeFor(names ...string) (mode string, named bool) {
	for _, n := range names {
		if m, ok := r.Senders[n]; ok && n != "" {
			return m, true
		}
	}
	if r.Mode == "" {
		return InboundAccept, false
	}
	return r.Mode, false
}

// InboundFor is the rule of the session named name (or with id id); "*"
// is the rule of sessions with none of their own.
func (c Config) InboundFor(name, id string) InboundRule {
	for _, k := range []string{name, id, "*"} {
		if r, ok := c.Inbound[k]; ok && k != "" {
			return r
		}
	}
	return InboundRule{Mode: InboundAccept}
}

func validInbound(mode string) bool {
	return mode == InboundAccept || mode == InboundHold || mode == InboundRefuse
}

// parseInbound reads `inbound`: session name (or "*") to a mode string, or
// to {"mode": ..., "senders": {sender: mode}}.
func parseInbound(raw json.RawMessage, c *Config) error {
	var v map[string]json.RawMessage
	if err := strictUnmarshal(raw, &v); err != nil {
		return errors.New(`must be an object: session name (or "*") to "accept", "hold", "refuse" or {"mode": ..., "senders": {...}}`)
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]InboundRule, len(v))
	for _, k := range keys {
		var r InboundRule
		if json.Unmarshal(v[k], &r.Mode) != nil {
			if err := strictUnmarshal(v[k], &r); err != nil {
				return fmt.Errorf("session %q: must be a mode or {\"mode\": ..., \"senders\": {...}}", k)
			}
		}
		if r.Mode == "" {
			r.Mode = InboundAccept
		}
		if !validInbound(r.Mode) {
			return fmt.Errorf("session %q: mode %q must be accept, hold or refuse", k, r.Mode)
		}
		for s, m := range r.Senders {
			if !validInbound(m) {
				return fmt.Errorf("session %q: sender %q: mode %q must be accept, hold or refuse", k, s, m)
			}
		}
		out[k] = r
	}
	c.Inbound = out
	return nil
}
