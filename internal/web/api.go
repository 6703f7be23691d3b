package web

import (
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/history"
	"github.com/intercom-dev/intercom/pkg/wire"
)

//go:embed assets
var assets embed.FS

var page = template.Must(template.ParseFS(assets, "assets/index.html"))

// maxBody bounds a request body.
const maxBody = 2 << 20

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = page.Execute(w, struct{ Token string }{s.token})
	})
	mux.HandleFunc("GET /api/events", s.events)
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) { reply(w, s.readState(r.Context()), nil) })
	mux.HandleFunc("GET /api/history", s.history)
	mux.HandleFunc("GET /api/search", s.search)
	mux.HandleFunc("GET /api/trace", func(w http.ResponseWriter, r *http.Request) {
		tr, err := s.opts.Client.Trace(r.Context(), r.URL.Query().Get("id"))
		reply(w, tr, err)
	})
	mux.HandleFunc("POST /api/send", s.send)
	mux.HandleFunc("POST /api/answer", s.answer)
	return mux
}

// reply writes v as JSON, or err as {"error": …} with a 4xx or 5xx status.
func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		status := http.StatusInternalServerError
		var we *wire.Error
		if errors.As(err, &we) || errors.Is(err, history.ErrEmptyQuery) || errors.Is(err, errBadRequest) {
			status = http.StatusBadRequest
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

var errBadRequest = errors.New("bad request")

func filterOf(r *http.Request) (history.Filter, error) {
	q := r.URL.Query()
	f := history.Filter{Session: q.Get("session"), From: q.Get("from"), To: q.Get("to"), Thread: q.Get("thread"), Topic: q.Get("topic"), Limit: 200}
	if v := q.Get("since"); v != "" {
		t, err := history.ParseSince(v, time.Now())
		if err != nil {
			return f, errors.Join(errBadRequest, err)
		}
		f.Since = t
	}
	return f, nil
}

type items struct {
	Items []history.Item `json:"items"`
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	f, err := filterOf(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	its, err := s.opts.Index.History(r.Context(), f)
	reply(w, items{its}, err)
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	f, err := filterOf(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	f.Limit = 50
	if _, err := s.opts.Index.Sync(r.Context(), s.opts.Client); err != nil {
		s.opts.Log.Debug("history not caught up", "err", err)
	}
	its, err := s.opts.Index.Search(r.Context(), r.URL.Query().Get("q"), f)
	reply(w, items{its}, err)
}

func decode(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return errors.Join(errBadRequest, errors.New("want Content-Type application/json"))
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errors.Join(errBadRequest, err)
	}
	return nil
}

// SendRequest is POST /api/send: a message from the person's session.
type SendRequest struct {
	To   string `json:"to"`
	Text string `json:"text"`
	Ask  bool   `json:"ask,omitempty"` // expects a reply
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	var req SendRequest
	if err := decode(r, &req); err != nil {
		reply(w, nil, err)
		return
	}
	res, err := s.opts.Client.Send(r.Context(), wire.SendRequest{From: s.opts.Person.ID(), To: req.To, Text: req.Text, ExpectsReply: req.Ask})
	reply(w, res, err)
}

// AnswerRequest is POST /api/answer: a person's answer to a run's question.
type AnswerRequest struct {
	Run      string `json:"run"`
	Question string `json:"question"`
	Text     string `json:"text"`
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var req AnswerRequest
	if err := decode(r, &req); err != nil {
		reply(w, nil, err)
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		reply(w, nil, errors.Join(errBadRequest, errors.New("an answer needs text")))
		return
	}
	rec, err := s.opts.Desk.Answer(r.Context(), req.Run, req.Question, req.Text)
	if rec != nil && err != nil {
		rec.Note += " (" + err.Error() + ")"
		err = nil
	}
	reply(w, rec, err)
}
