package intercomcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// controlLine is one line an extension writes to attach --control.
type controlLine struct {
	Ack   []string `json:"ack,omitempty"`
	State string   `json:"state,omitempty"`
}

// controlError is the line attach --control prints for a control line it
// could not carry out.
type controlError struct {
	Event string `json:"event"` // error
	Error string `json:"error"`
}

// control runs attach --control: messages are printed (with the text for
// the model) and left unacknowledged until stdin says the model has them.
func (e *env) control(c *intercom.Client, s *intercom.Session, info wire.Session, out *bufio.Writer, reconnected <-chan struct{}) error {
	lines := make(chan controlLine)
	bad := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(e.stdin)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			text := strings.TrimSpace(sc.Text())
			if text == "" {
				continue
			}
			var l controlLine
			if err := json.Unmarshal([]byte(text), &l); err != nil {
				select {
				case bad <- fmt.Sprintf("control line is not JSON: %v", err):
				case <-e.ctx.Done():
					return
				}
				continue
			}
			select {
			case lines <- l:
			case <-e.ctx.Done():
				return
			}
		}
	}()
	detach := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return s.Detach(ctx)
	}
	emit := func(v any) error {
		_ = kongrun.PrintJSON(out, v)
		if err := out.Flush(); err != nil {
			return fmt.Errorf("write event: %w", err)
		}
		return nil
	}
	for {
		var err error
		select {
		case <-e.ctx.Done():
			return detach()
		case <-c.Done():
			return c.Err()
		case msg := <-bad:
			err = emit(controlError{Event: "error", Error: msg})
		case l, ok := <-lines:
			if !ok {
				return detach() // the extension's process ended
			}
			if problem := e.applyControl(s, l); problem != "" {
				err = emit(controlError{Event: "error", Error: problem})
			}
		case <-reconnected:
			err = emit(schema.Reconnected{Event: "reconnected", ID: info.ID, Name: info.Name})
		case m := <-s.Messages():
			j := toJSON(m)
			j.Rendered = render.ForAgent(m, e.cfg.ReplyHint)
			err = emit(j)
		}
		if err != nil {
			return err
		}
	}
}

// applyControl carries out one control line; it returns what went wrong.
func (e *env) applyControl(s *intercom.Session, l controlLine) string {
	if len(l.Ack) > 0 {
		if err := s.Ack(e.ctx, l.Ack...); err != nil && e.ctx.Err() == nil {
			e.log.Warn("ack not confirmed yet; retrying until the broker confirms it", "ids", l.Ack, "err", err)
		}
	}
	if l.State == "" {
		return ""
	}
	status := l.State
	if err := wire.ValidateStatus(status); err != nil || strings.Contains(status, " · ") {
		return fmt.Sprintf("invalid state %q: want idle, thinking or tool:NAME", status)
	}
	if e.cfg.Status != "" {
		status += " · " + e.cfg.Status
	}
	if err := s.SetState(e.ctx, status, nil); err != nil && e.ctx.Err() == nil {
		return fmt.Sprintf("report state %s: %v", l.State, err)
	}
	return ""
}
