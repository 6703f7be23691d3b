// Package config loads and validates INTERCOM_HOME/config.json.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/bounded"
	"github.com/intercom-dev/intercom/internal/duration"
	"github.com/intercom-dev/intercom/internal/jsonfields"
	"github.com/intercom-dev/intercom/internal/paths"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Config is the user configuration. Zero values are replaced by defaults.
type Config struct {
	ConfirmSend   bool     `json:"confirmSend"`
	ReplyHint     bool     `json:"replyHint"`
	AskTimeoutMs  int64    `json:"askTimeoutMs"`
	SendTimeoutMs int64    `json:"sendTimeoutMs"`
	ListTimeoutMs int64    `json:"listTimeoutMs"`
	Status        string   `json:"status"`
	BrokerCommand string   `json:"brokerCommand"`
	BrokerArgs    []string `json:"brokerArgs"`
	IdleExitMs    int64    `json:"idleExitMs"`
	ForgetAfterMs int64    `json:"forgetAfterMs"`
	Shortcut      string   `json:"shortcut"`
	// AskResumeGraceMs is how long an ask to a session whose holder went
	// away stays pending for that session to resume (internal/broker).
	AskResumeGraceMs int64 `json:"askResumeGraceMs"`
	// History retention (internal/broker/history.go): how long and how
	// many bytes of delivered messages and topic records are kept.
	HistoryMaxAgeMs int64 `json:"historyMaxAgeMs"`
	HistoryMaxBytes int64 `json:"historyMaxBytes"`

	// Stalls (stuck.go): how long a session may stay busy with no
	// boundary, or leave steers waiting, before it shows as stuck, and how
	// long agent-runs waits between the steps of its --on-stuck ladder.
	StuckAfterMs       int64 `json:"stuckAfterMs"`
	StuckSteersAfterMs int64 `json:"stuckSteersAfterMs"`
	StuckStepAfterMs   int64 `json:"stuckStepAfterMs"`
	// Inbound is each session's inbound policy by session name ("*": every
	// other session), inbound.go; none accepts everything.
	Inbound map[string]InboundRule `json:"inbound,omitempty"`
	// Attention (docs/concepts.md, "Attention: digests and wake budget"):
	// the bytes of one boundary's digest, how many times peers may wake an
	// idle agent per window, and after how many rounds of two agents waking
	// each other the loop breaker pauses them.
	DigestBytes    int64 `json:"digestBytes"`
	WakeBudget     int64 `json:"wakeBudget"`
	WakeWindowMs   int64 `json:"wakeWindowMs"`
	WakeLoopRounds int64 `json:"wakeLoopRounds"`
}

// Defaults returns the configuration used when config.json is absent.
func Defaults() Config {
	return Config{
		ReplyHint:     true,
		AskTimeoutMs:  120000,
		SendTimeoutMs: wire.DefaultRequestTimeout.Milliseconds(),
		ListTimeoutMs: 5000,
		IdleExitMs:    5000,
		ForgetAfterMs: 600000,
		Shortcut:      "alt+shift+m",
		// A restarting harness (pi -c) resumes its session well within it.
		AskResumeGraceMs: 60000,
		// 30 days and 512 MiB.
		HistoryMaxAgeMs: 30 * 24 * 3600 * 1000,
		HistoryMaxBytes: 512 << 20,

		// 10 minutes busy, 5 minutes of waiting steers, 2 minutes a step.
		StuckAfterMs:       600000,
		StuckSteersAfterMs: 300000,
		StuckStepAfterMs:   120000,
		DigestBytes:        9000,
		WakeBudget:         6,
		WakeWindowMs:       10 * 60 * 1000,
		WakeLoopRounds:     4,
	}
}

// MaxBytes is the largest config.json read.
const MaxBytes = 1 << 20

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid config")

// AskTimeout, SendTimeout, ListTimeout and IdleExit return durations.
func (c Config) AskTimeout() time.Duration  { return time.Duration(c.AskTimeoutMs) * time.Millisecond }
func (c Config) SendTimeout() time.Duration { return time.Duration(c.SendTimeoutMs) * time.Millisecond }
func (c Config) ListTimeout() time.Duration { return time.Duration(c.ListTimeoutMs) * time.Millisecond }
func (c Config) IdleExit() time.Duration    { return time.Duration(c.IdleExitMs) * time.Millisecond }

// ForgetAfter is how long the broker keeps a disconnected session that never
// held a message (0: forever).
func (c Config) ForgetAfter() time.Duration { return time.Duration(c.ForgetAfterMs) * time.Millisecond }

// AskResumeGrace is how long an ask to a session that detached without
// ending stays pending for it to resume (0: it ends at once).
func (c Config) AskResumeGrace() time.Duration {
	return time.Duration(c.AskResumeGraceMs) * time.Millisecond
}

// HistoryMaxAge is how long delivered messages and topic records are kept
// (0: none are).
func (c Config) HistoryMaxAge() time.Duration {
	return time.Duration(c.HistoryMaxAgeMs) * time.Millisecond
}

// ForHome is where a command works and how: the layout of home and socket
// (paths.Resolve; a home chosen explicitly, by flag or INTERCOM_HOME, must
// have an existing parent, paths.CheckParent) and its config.json (Load),
// each ignored key told to warn.
func ForHome(home, socket string, warn func(string)) (paths.Layout, Config, error) {
	l, err := paths.Resolve(home, socket)
	if err == nil && home != "" {
		err = paths.CheckParent(l.Home)
	}
	if err != nil {
		return l, Config{}, err
	}
	cfg, warnings, err := Load(l.ConfigFile())
	for _, w := range warnings {
		warn(w)
	}
	return l, cfg, err
}

// Load reads path. A missing file yields the defaults. Unknown keys are
// returned as warnings; a bad value is an error naming the key.
func Load(path string) (Config, []string, error) {
	data, err := bounded.ReadFile(path, path, MaxBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Defaults(), nil, nil
	}
	if errors.Is(err, bounded.ErrTooLarge) {
		return Config{}, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return Config{}, nil, fmt.Errorf("read config %s: %w", path, err)
	}
	return Parse(data)
}

var known = map[string]func(json.RawMessage, *Config) error{
	"confirmSend":      boolField(func(c *Config) *bool { return &c.ConfirmSend }),
	"replyHint":        boolField(func(c *Config) *bool { return &c.ReplyHint }),
	"askTimeoutMs":     msField(func(c *Config) *int64 { return &c.AskTimeoutMs }, ""),
	"sendTimeoutMs":    msField(func(c *Config) *int64 { return &c.SendTimeoutMs }, ""),
	"listTimeoutMs":    msField(func(c *Config) *int64 { return &c.ListTimeoutMs }, ""),
	"idleExitMs":       msField(func(c *Config) *int64 { return &c.IdleExitMs }, "run forever"),
	"forgetAfterMs":    msField(func(c *Config) *int64 { return &c.ForgetAfterMs }, "never forget"),
	"askResumeGraceMs": msField(func(c *Config) *int64 { return &c.AskResumeGraceMs }, "no grace"),
	"status":           stringField(func(c *Config) *string { return &c.Status }, true),
	"brokerCommand":    stringField(func(c *Config) *string { return &c.BrokerCommand }, false),
	"shortcut":         stringField(func(c *Config) *string { return &c.Shortcut }, false),
	"historyMaxAgeMs":  msField(func(c *Config) *int64 { return &c.HistoryMaxAgeMs }, "keep no history"),
	"historyMaxBytes": func(raw json.RawMessage, c *Config) error {
		var v int64
		if err := strictUnmarshal(raw, &v); err != nil || v < 0 {
			return errors.New("must be a whole number of bytes, 0 or more")
		}
		c.HistoryMaxBytes = v
		return nil
	},
	"inbound":        parseInbound,
	"digestBytes":    countField(func(c *Config) *int64 { return &c.DigestBytes }, 1000),
	"wakeBudget":     countField(func(c *Config) *int64 { return &c.WakeBudget }, 0),
	"wakeWindowMs":   msField(func(c *Config) *int64 { return &c.WakeWindowMs }, ""),
	"wakeLoopRounds": countField(func(c *Config) *int64 { return &c.WakeLoopRounds }, 0),
	"brokerArgs": func(raw json.RawMessage, c *Config) error {
		var v []string
		if err := strictUnmarshal(raw, &v); err != nil {
			return errors.New("must be an array of strings")
		}
		c.BrokerArgs = v
		return nil
	},
}

// Parse validates a config document.
func Parse(data []byte) (Config, []string, error) {
	cfg := Defaults()
	raw, err := members(data)
	if err != nil {
		return Config{}, nil, fmt.Errorf("%w: config.json is not a JSON object: %v", ErrInvalid, err)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var warnings []string
	for _, k := range keys {
		set, ok := known[k]
		if !ok {
			warnings = append(warnings, fmt.Sprintf("config.json: unknown key %q ignored", k))
			continue
		}
		if err := set(raw[k], &cfg); err != nil {
			return Config{}, warnings, fmt.Errorf("%w: %q %v", ErrInvalid, k, err)
		}
	}
	return cfg, warnings, nil
}

// members splits the document into its keys' values as json.Unmarshal
// into a map of json.RawMessage does. It and strictUnmarshal read through
// jsonfields where it can: a hook reads the config at every call, and
// otherwise encoding/json's reflection would be its one use of it.
func members(data []byte) (map[string]json.RawMessage, error) {
	if m, ok := jsonfields.Members(data); ok {
		raw := make(map[string]json.RawMessage, len(m))
		for k, v := range m {
			raw[k] = v
		}
		return raw, nil
	}
	var raw map[string]json.RawMessage
	err := json.Unmarshal(data, &raw)
	return raw, err
}

func strictUnmarshal(raw json.RawMessage, v any) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return errors.New("null")
	}
	if jsonfields.Value(raw, v) {
		return nil
	}
	return json.Unmarshal(raw, v)
}

func boolField(field func(*Config) *bool) func(json.RawMessage, *Config) error {
	return func(raw json.RawMessage, c *Config) error {
		var v bool
		if err := strictUnmarshal(raw, &v); err != nil {
			return errors.New("must be true or false")
		}
		*field(c) = v
		return nil
	}
}

// msField is a duration in milliseconds, checked by the one duration rule;
// zeroMeans documents what 0 means ("" refuses it).
func msField(field func(*Config) *int64, zeroMeans string) func(json.RawMessage, *Config) error {
	return func(raw json.RawMessage, c *Config) error {
		var v float64
		if err := strictUnmarshal(raw, &v); err != nil {
			return errors.New("must be a number of milliseconds")
		}
		d, err := duration.Millis(v, zeroMeans)
		if err != nil {
			return err
		}
		*field(c) = d.Milliseconds()
		return nil
	}
}

// countField is a whole number of at least least.
func countField(field func(*Config) *int64, least int64) func(json.RawMessage, *Config) error {
	return func(raw json.RawMessage, c *Config) error {
		var v int64
		if err := strictUnmarshal(raw, &v); err != nil || v < least {
			return fmt.Errorf("must be a whole number, %d or more", least)
		}
		*field(c) = v
		return nil
	}
}

func stringField(field func(*Config) *string, allowEmpty bool) func(json.RawMessage, *Config) error {
	return func(raw json.RawMessage, c *Config) error {
		var v string
		if err := strictUnmarshal(raw, &v); err != nil {
			return errors.New("must be a string")
		}
		if !allowEmpty && strings.TrimSpace(v) == "" {
			return errors.New("must not be empty")
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return errors.New("must not contain control characters")
		}
		*field(c) = v
		return nil
	}
}
