package main

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
)

// The attacker as a host that answers: what it replies to the victim's
// requests, what it saw of them, and what reaches it.

// answer answers every request of the victim's op c.Op from now on with
// c.Data (instead of an earlier answer), as a host that replies whatever it likes (c.From: a third host
// the victim's requests are for, on a malicious hub).
func (a *attacker) answer(c cmd) map[string]any {
	to := c.From
	if to == "" {
		to = a.cfg.name
	}
	subject := "icb.req." + tok(to) + "." + tok(a.cfg.victim) + "." + c.Op
	sub, err := a.nc.Subscribe(subject, func(m *nats.Msg) {
		a.mu.Lock()
		a.last = m.Data
		a.mu.Unlock()
		_ = m.Respond([]byte(c.Data))
	})
	if err == nil {
		err = a.nc.Flush()
	}
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	a.mu.Lock()
	if old := a.answering[subject]; old != nil {
		_ = old.Unsubscribe()
	}
	a.answering[subject] = sub
	a.mu.Unlock()
	return map[string]any{"answering": subject}
}

// observe runs watch (count what arrives on c.Subject from now on;
// refused: nothing), watched (the counts) and last-request.
func (a *attacker) observe(c cmd, wait time.Duration) map[string]any {
	switch c.Do {
	case "watch":
		_, err := a.nc.Subscribe(c.Subject, func(*nats.Msg) { // kept until the program exits
			a.mu.Lock()
			a.watched[c.Subject]++
			a.mu.Unlock()
		})
		if err == nil {
			err = a.nc.Flush()
		}
		return map[string]any{"watching": err == nil}
	case "watched":
		a.mu.Lock()
		defer a.mu.Unlock()
		out := map[string]any{}
		for k, v := range a.watched {
			out[k] = v
		}
		return map[string]any{"counts": out}
	case "last-request": // the body of the last request answered since the last asked, once one came
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			a.mu.Lock()
			last := a.last
			a.last = nil
			a.mu.Unlock()
			if last != nil {
				return map[string]any{"body": json.RawMessage(last)}
			}
			time.Sleep(20 * time.Millisecond)
		}
		return map[string]any{"error": "no request came"}
	}
	return nil
}
