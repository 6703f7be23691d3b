package wire

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// Reservations: leases on paths of a project, each grant carrying a fencing
// token (docs/reservations.md). Paths are slash-separated, relative to the
// project's worktree root, and may be globs (*, ?, [...], ** for any depth)
// or directories (a reserved directory covers everything under it).
const (
	SubjReserve      = SubjectPrefix + "reserve"
	SubjRelease      = SubjectPrefix + "release"
	SubjReservations = SubjectPrefix + "reservations"
)

// DefaultReservationTTL is a lease's TTL when the request names none.
const DefaultReservationTTL = 30 * time.Minute

// MaxReservationTTL bounds a requested TTL.
const MaxReservationTTL = 7 * 24 * time.Hour

// ReserveRequest asks for leases on Paths for SessionID, all or none.
type ReserveRequest struct {
	SessionID string        `json:"session_id"`
	Project   string        `json:"project"`
	Paths     []string      `json:"paths"`
	Shared    bool          `json:"shared,omitempty"`
	TTL       time.Duration `json:"ttl,omitempty"` // 0: DefaultReservationTTL
	Reason    string        `json:"reason,omitempty"`
}

// ReservationInfo is one session's lease on one path.
type ReservationInfo struct {
	Project   string    `json:"project"`
	Path      string    `json:"path"`
	SessionID string    `json:"session_id"`
	Name      string    `json:"name"`
	Shared    bool      `json:"shared"`
	Reason    string    `json:"reason,omitempty"`
	Token     uint64    `json:"token"`
	Granted   time.Time `json:"granted"`
	Renewed   time.Time `json:"renewed"`
	Expires   time.Time `json:"expires"`
	Connected bool      `json:"connected"` // the holder's session is connected now
}

// ReservationConflict is a requested (or edited) path that another
// session's lease covers.
type ReservationConflict struct {
	Path string          `json:"path"`
	Held ReservationInfo `json:"held"`
}

// ReserveReply grants every path (Granted) or none (Refused names the
// conflicts; Granted is then empty).
type ReserveReply struct {
	Granted []ReservationInfo     `json:"granted,omitempty"`
	Refused []ReservationConflict `json:"refused,omitempty"`
}

// ReleaseRequest lets go of SessionID's leases on Paths, or All of them
// (in every project when Project is empty too).
type ReleaseRequest struct {
	SessionID string   `json:"session_id"`
	Project   string   `json:"project,omitempty"`
	Paths     []string `json:"paths,omitempty"`
	All       bool     `json:"all,omitempty"`
}

// ReleaseReply lists the leases let go.
type ReleaseReply struct {
	Released []ReservationInfo `json:"released,omitempty"`
}

// ReservationsRequest reads reservations. With Check, it answers which of
// those paths are held by a session other than SessionID (Blocked); with
// Token as well, whether Token is the current grant covering Check[0]
// (Current). With History, the timeline of that path. Otherwise the live
// leases of Project ("" for every project), those covering Path when set.
type ReservationsRequest struct {
	SessionID string   `json:"session_id,omitempty"`
	Project   string   `json:"project,omitempty"`
	Path      string   `json:"path,omitempty"`
	Check     []string `json:"check,omitempty"`
	Token     uint64   `json:"token,omitempty"`
	History   string   `json:"history,omitempty"`
}

// ReservationEvent is one grant, renewal or release in a path's history.
type ReservationEvent struct {
	At        time.Time `json:"at"`
	Path      string    `json:"path"`
	Event     string    `json:"event"` // grant, release, expire, gone
	SessionID string    `json:"session_id"`
	Name      string    `json:"name,omitempty"`
	Token     uint64    `json:"token,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

// ReservationsReply answers a ReservationsRequest.
type ReservationsReply struct {
	Reservations []ReservationInfo     `json:"reservations"`
	Blocked      []ReservationConflict `json:"blocked,omitempty"`
	Current      bool                  `json:"current,omitempty"`
	History      []ReservationEvent    `json:"history,omitempty"`
}

// CleanReservationPath checks and normalises a reservation path: relative,
// slash-separated, inside the project, no trailing slash.
func CleanReservationPath(p string) (string, error) {
	if p == "" {
		return "", Errorf(CodeBadRequest, "empty reservation path")
	}
	if strings.ContainsRune(p, 0) || len(p) > 4096 {
		return "", Errorf(CodeBadRequest, "bad reservation path %q", p)
	}
	if strings.HasPrefix(p, "/") {
		return "", Errorf(CodeBadRequest, "reservation path %q is absolute: give it relative to the project root", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", Errorf(CodeBadRequest, "reservation path %q is outside the project", p)
	}
	if _, err := path.Match(c, ""); err != nil {
		return "", Errorf(CodeBadRequest, "reservation path %q: %v", p, err)
	}
	return c, nil
}

// ValidateReserve checks a ReserveRequest and normalises its paths.
func ValidateReserve(req *ReserveRequest) error {
	if req.SessionID == "" {
		return Errorf(CodeBadRequest, "reserve: no session: run it as an agent's session or pass --session")
	}
	if req.Project == "" {
		return Errorf(CodeBadRequest, "reserve: no project")
	}
	if len(req.Paths) == 0 {
		return Errorf(CodeBadRequest, "reserve: no path")
	}
	if req.TTL < 0 || req.TTL > MaxReservationTTL {
		return Errorf(CodeBadRequest, "reserve: ttl %s out of range (0 to %s)", req.TTL, MaxReservationTTL)
	}
	if len(req.Reason) > 1000 {
		return Errorf(CodeBadRequest, "reserve: reason longer than 1000 bytes")
	}
	for i, p := range req.Paths {
		c, err := CleanReservationPath(p)
		if err != nil {
			return err
		}
		req.Paths[i] = c
	}
	return nil
}

// String is the one-line description of a conflict, with how to ask the
// holder.
func (c ReservationConflict) String() string {
	h := c.Held
	who := h.Name
	if who == "" {
		who = h.SessionID
	}
	reason := ""
	if h.Reason != "" {
		reason = fmt.Sprintf(" (%q)", h.Reason)
	}
	kind := "reserved"
	if h.Shared {
		kind = "reserved (shared)"
	}
	age := time.Since(h.Granted).Round(time.Second)
	covers := ""
	if h.Path != c.Path {
		covers = " through " + h.Path
	}
	return fmt.Sprintf("%s is %s by %s%s%s for %s, token %d; ask it: intercom ask %s \"may I edit %s?\"",
		c.Path, kind, who, reason, covers, age, h.Token, who, c.Path)
}

// ReservationToolVerdict answers `intercom reservations --check-tool`:
// whether the tool call would edit a path another session holds.
type ReservationToolVerdict struct {
	Block  bool   `json:"block"`
	Reason string `json:"reason,omitempty"`
}
