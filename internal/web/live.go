package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/history"
	"github.com/intercom-dev/intercom/internal/runs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// Live updates: the watcher refreshes the view from the broker every
// Options.Every and sends what changed to every page as server-sent
// events: "state" (sessions, topics, runs: the whole of it, when it
// changed) and "entries" (history entries new since the last round).

// timelineSize is how many entries a page gets when it connects.
const timelineSize = 300

// State is what the page shows besides the history.
type State struct {
	Person   wire.Session     `json:"person"`
	Sessions []SessionView    `json:"sessions"`
	Topics   []wire.TopicInfo `json:"topics"`
	Runs     []RunView        `json:"runs"`
	Error    string           `json:"error,omitempty"`
}

// SessionView is a session and the resources it holds.
type SessionView struct {
	wire.Session
	Holds []string `json:"holds,omitempty"`
}

// RunView is a supervised run and its questions.
type RunView struct {
	*runs.Run
	Questions []*runs.Question `json:"questions"`
}

func (s *Server) watch(ctx context.Context) {
	cursor := ""
	if items, err := s.opts.Index.After(ctx, "", 1); err == nil && len(items) > 0 {
		cursor = items[0].Cursor
	}
	tick := time.NewTicker(s.opts.Every)
	defer tick.Stop()
	for {
		if _, err := s.opts.Index.Sync(ctx, s.opts.Client); err != nil && ctx.Err() == nil {
			s.opts.Log.Debug("history not caught up", "err", err)
		}
		if items, err := s.opts.Index.After(ctx, cursor, 1000); err == nil && len(items) > 0 {
			cursor = items[len(items)-1].Cursor
			s.hub.send("entries", items)
		}
		st := s.readState(ctx)
		data, _ := json.Marshal(st)
		s.mu.Lock()
		changed := !bytes.Equal(data, s.state)
		s.state = data
		s.mu.Unlock()
		if changed {
			s.hub.sendRaw("state", data)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// receive acknowledges what the person's session is sent: it is then in the
// history, and so on the page.
func (s *Server) receive(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-s.opts.Person.Messages():
			if !ok {
				return
			}
			if err := s.opts.Person.Ack(ctx, m.ID); err != nil {
				s.opts.Log.Debug("ack", "id", m.ID, "err", err)
			}
		}
	}
}

func (s *Server) readState(ctx context.Context) State {
	st := State{Person: s.opts.Person.Info(), Sessions: []SessionView{}, Topics: []wire.TopicInfo{}, Runs: []RunView{}}
	sessions, err := s.opts.Client.List(ctx, intercom.ListOptions{Scope: "all", IncludeDisconnected: true})
	if err != nil {
		st.Error = err.Error()
		return st
	}
	topics, err := s.opts.Client.Topics(ctx, "")
	if err != nil {
		st.Error = err.Error()
	} else {
		st.Topics = topics
	}
	holds := map[string][]string{}
	for _, t := range topics {
		for _, r := range t.Resources {
			if r.State == "held" && r.Holder != nil {
				holds[r.Holder.ID] = append(holds[r.Holder.ID], r.Resource)
			}
		}
	}
	for _, ss := range sessions {
		ss.LastSeen = ss.LastSeen.Truncate(time.Second)
		st.Sessions = append(st.Sessions, SessionView{Session: ss, Holds: holds[ss.ID]})
	}
	sort.Slice(st.Sessions, func(i, j int) bool {
		a, b := st.Sessions[i], st.Sessions[j]
		if a.Connected != b.Connected {
			return a.Connected
		}
		return a.Name < b.Name
	})
	if rs, err := s.opts.Desk.Files.List(); err == nil {
		sort.Slice(rs, func(i, j int) bool { return rs[i].CreatedAt.After(rs[j].CreatedAt) })
		for _, r := range rs[:min(len(rs), 50)] {
			qs, _ := s.opts.Desk.Files.Questions(r.ID)
			runs.SortQuestions(qs)
			if qs == nil {
				qs = []*runs.Question{}
			}
			st.Runs = append(st.Runs, RunView{Run: r, Questions: qs})
		}
	}
	return st
}

// hub fans events out to the connected pages.
type hub struct {
	mu      sync.Mutex
	clients map[chan []byte]bool
	closed  bool
}

func newHub() *hub { return &hub{clients: map[chan []byte]bool{}} }

func (h *hub) send(event string, v any) {
	data, err := json.Marshal(v)
	if err == nil {
		h.sendRaw(event, data)
	}
}

func (h *hub) sendRaw(event string, data []byte) {
	frame := fmt.Appendf(nil, "event: %s\ndata: %s\n\n", event, data)
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		select {
		case c <- frame:
		default: // a page that does not keep up starts again
			delete(h.clients, c)
			close(c)
		}
	}
}

func (h *hub) join() (chan []byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	c := make(chan []byte, 256)
	h.clients[c] = true
	return c, true
}

func (h *hub) leave(c chan []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.clients[c] {
		delete(h.clients, c)
		close(c)
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for c := range h.clients {
		delete(h.clients, c)
		close(c)
	}
}

// events serves the event stream: the state and the recent timeline
// first, then every change.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	c, ok := s.hub.join()
	if !ok {
		http.Error(w, "stopping", http.StatusServiceUnavailable)
		return
	}
	defer s.hub.leave(c)
	w.Header().Set("Content-Type", "text/event-stream")
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if state == nil {
		state, _ = json.Marshal(s.readState(r.Context()))
	}
	fmt.Fprintf(w, "event: state\ndata: %s\n\n", state)
	if items, err := s.opts.Index.After(r.Context(), "", timelineSize); err == nil {
		data, _ := json.Marshal(struct {
			Items []history.Item `json:"items"`
		}{items})
		fmt.Fprintf(w, "event: timeline\ndata: %s\n\n", data)
	}
	fl.Flush()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case frame, ok := <-c:
			if !ok {
				return
			}
			if _, err := w.Write(frame); err != nil {
				return
			}
			fl.Flush()
		case <-keep.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
