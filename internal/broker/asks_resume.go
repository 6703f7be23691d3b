package broker

import (
	"os"
	"time"

	"github.com/intercom-dev/intercom/internal/config"
	"github.com/intercom-dev/intercom/internal/paths"
)

// Asks across a restart of the asked session. A local session whose holder
// goes away (closed cleanly or crashed) without ending, like Pi restarting
// with `pi -c`, keeps the asks to it for the resume grace: the asker keeps
// waiting, the resumed session sees them in `pending` and its reply answers
// them. Once the grace has passed with the session still away, they end
// with peer_disconnected. An ask whose own timeout comes first times out as
// usual. A session that ends for good (ephemeral, forgotten) ends the asks
// to it at once, and asks to remote sessions follow their host's reports
// (failRemoteAsks), as before.

// DefaultAskResumeGrace is the resume grace when config.json names none;
// INTERCOM_ASK_RESUME_GRACE (a Go duration, 0 for none) in the broker's
// environment overrides askResumeGraceMs.
const DefaultAskResumeGrace = time.Minute

// askResumeGrace reads the resume grace of the broker of layout l.
func askResumeGrace(l paths.Layout) time.Duration {
	if d, err := time.ParseDuration(os.Getenv("INTERCOM_ASK_RESUME_GRACE")); err == nil && d >= 0 {
		return d
	}
	cfg, _, err := config.Load(l.ConfigFile())
	if err != nil {
		return DefaultAskResumeGrace
	}
	return cfg.AskResumeGrace()
}

// targetAwayLocked starts the resume grace of the asks to session sid,
// which detached without ending; an ask already in its grace keeps it.
func (t *askTable) targetAwayLocked(sid string) {
	for _, a := range t.byID {
		if a.to != sid || a.away {
			continue
		}
		left := time.Until(a.expires)
		if t.grace <= 0 || left <= 0 {
			t.endLocked(a, "peer_disconnected", "")
			continue
		}
		a.away = true
		if t.grace >= left {
			continue // its timeout ends it first
		}
		a.awayTimer = t.tasks.After(t.grace, func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.byID[a.id] == a && a.away {
				t.endLocked(a, "peer_disconnected", "")
			}
		})
	}
}

// targetAway is targetAwayLocked taking the lock.
func (t *askTable) targetAway(sid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.targetAwayLocked(sid)
}

// targetBack ends the resume grace of the asks to session sid: it attached
// again, so they are pending as before it left.
func (t *askTable) targetBack(sid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.byID {
		if a.to == sid && a.away {
			a.awayTimer.Stop()
			a.away, a.awayTimer = false, nil
		}
	}
}
