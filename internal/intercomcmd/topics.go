package intercomcmd

import (
	"fmt"
	"strings"

	"github.com/intercom-dev/intercom/internal/kongrun"
	"github.com/intercom-dev/intercom/internal/render"
	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func checkTopic(t string) error {
	if err := wire.ValidateTopic(t); err != nil {
		return kongrun.Usage(err)
	}
	return nil
}

// SubscribeCmd subscribes the session to a topic.
type SubscribeCmd struct {
	Topic        string `arg:"" help:"Exact topic name (no wildcards)."`
	AwaitRelease bool   `name:"await-release" help:"Also wake this session on an explicit release publication."`
}

// Help shows examples.
func (SubscribeCmd) Help() string {
	return `Subscriptions are explicit and exact. Subscribers are woken (a steer
message) by blocker and decision publications; with --await-release also by
release. Routine updates never wake anyone: read them with 'topics'.
Subscribing replays nothing; the current records are in 'topics'.

Examples:
  intercom -s reviewer subscribe browser/shared-profile/tab-4 --await-release
  intercom -s worker subscribe repo/api/migrations`
}

// Run subscribes.
func (s *SubscribeCmd) Run(e *env) error {
	if err := checkTopic(s.Topic); err != nil {
		return err
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	self, err := e.needSelf(c, "subscribe")
	if err != nil {
		return err
	}
	res, err := c.Subscribe(e.ctx, self, s.Topic, s.AwaitRelease)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", s.Topic, err)
	}
	if e.g.JSON {
		return e.printJSON(res)
	}
	extra := ""
	if s.AwaitRelease {
		extra = " (woken on blocker, decision and release)"
	} else {
		extra = " (woken on blocker and decision)"
	}
	fmt.Fprintf(e.stdout, "Subscribed to %s%s.\n", s.Topic, extra)
	return nil
}

// UnsubscribeCmd removes a subscription.
type UnsubscribeCmd struct {
	Topic string `arg:"" help:"Exact topic name."`
}

// Help shows examples.
func (UnsubscribeCmd) Help() string {
	return "Examples:\n  intercom -s reviewer unsubscribe browser/shared-profile/tab-4"
}

// Run unsubscribes.
func (u *UnsubscribeCmd) Run(e *env) error {
	if err := checkTopic(u.Topic); err != nil {
		return err
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	self, err := e.needSelf(c, "unsubscribe")
	if err != nil {
		return err
	}
	if err := c.Unsubscribe(e.ctx, self, u.Topic); err != nil {
		return fmt.Errorf("unsubscribe %s: %w", u.Topic, err)
	}
	if e.g.JSON {
		return e.printJSON(schema.Unsubscribed{Topic: u.Topic, Unsubscribed: true})
	}
	fmt.Fprintf(e.stdout, "Unsubscribed from %s.\n", u.Topic)
	return nil
}

// PublishCmd replaces this session's record on a topic.
type PublishCmd struct {
	Topic     string   `arg:"" help:"Exact topic name."`
	Message   []string `arg:"" help:"Self-contained current state ('-' reads stdin)."`
	Event     string   `enum:"update,blocker,decision,release" default:"update" help:"update (quiet), blocker/decision (wake subscribers), release (wake --await-release subscribers)."`
	Resource  string   `help:"Resource whose advisory ownership this record declares." placeholder:"R"`
	Ownership string   `enum:"held,released," default:"" help:"held or released (with --resource)."`
	Version   int64    `name:"record-version" hidden:"" help:"Ordering version (default: now in ns); an older one never replaces a newer record."`
	ClientID  string   `name:"client-id" help:"Idempotency key: a retried publication with the same key is applied once and wakes no one again." placeholder:"KEY"`
}

// Help shows examples.
func (PublishCmd) Help() string {
	return `Each session has one current record per topic; a newer publication replaces
it. Publications are latest state, not deltas. Ownership is advisory: a
holder that disconnects shows as unavailable, never as released.

Examples:
  intercom -s agent-a publish browser/shared-profile/tab-4 --resource tab-4 --ownership held "Reviewing the sign-in flow; keep this tab open."
  intercom -s agent-a publish browser/shared-profile/tab-4 --event release --resource tab-4 --ownership released "Sign-in check complete; this tab is available."
  intercom -s agent-a publish repo/api/migrations --event blocker "Migration 42 fails on empty tables; do not deploy."
  intercom -s agent-a publish repo/api/release --event decision --client-id rel-7 "Ship on Friday."`
}

// Run publishes.
func (p *PublishCmd) Run(e *env) error {
	if err := checkTopic(p.Topic); err != nil {
		return err
	}
	text, err := messageText(e, p.Message)
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return kongrun.Usagef("publish: message is empty")
	}
	if (p.Resource == "") != (p.Ownership == "") {
		return kongrun.Usagef("--resource and --ownership go together")
	}
	if p.Event == wire.EventRelease && p.Ownership == wire.OwnershipHeld {
		return kongrun.Usagef("--event release cannot declare --ownership held")
	}
	version := p.Version // 0: the broker orders by its own clock
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	self, err := e.needSelf(c, "publish")
	if err != nil {
		return err
	}
	res, err := c.Publish(e.ctx, wire.PublishRequest{From: self, Topic: p.Topic, Event: p.Event, Message: text, Resource: p.Resource, Ownership: p.Ownership, Version: version, ClientMsgID: p.ClientID})
	if err != nil {
		return fmt.Errorf("publish %s: %w", p.Topic, err)
	}
	if e.g.JSON {
		return e.printJSON(res)
	}
	switch {
	case res.Duplicate:
		fmt.Fprintf(e.stdout, "Already published on %s (client id %s); nobody woken again.\n", p.Topic, p.ClientID)
	case res.Stale:
		fmt.Fprintf(e.stdout, "Not applied: a newer record from this session is already current on %s.\n", p.Topic)
	case p.Event == wire.EventUpdate:
		fmt.Fprintf(e.stdout, "Updated %s (quiet: nobody woken).\n", p.Topic)
	default:
		fmt.Fprintf(e.stdout, "Published %s on %s; woke %d subscriber(s).\n", p.Event, p.Topic, res.Woken)
	}
	return nil
}

// TopicsCmd shows current topic state.
type TopicsCmd struct {
	Topic string `arg:"" optional:"" help:"One topic (default: all)."`
}

// Help shows examples.
func (TopicsCmd) Help() string {
	return `Shows each topic's current records (one per sender), subscribers and the
advisory owner of each resource (held, released, or unavailable when the
holder is disconnected). With --json: {"topics":[{topic,records,subscribers,resources}]}.

Examples:
  intercom topics
  intercom topics browser/shared-profile/tab-4 --json`
}

// Run shows topics.
func (t *TopicsCmd) Run(e *env) error {
	if t.Topic != "" {
		if err := checkTopic(t.Topic); err != nil {
			return err
		}
	}
	c, err := e.connect()
	if err != nil {
		return err
	}
	defer c.Close()
	topics, err := c.Topics(e.ctx, t.Topic)
	if err != nil {
		return err
	}
	if e.g.JSON {
		return e.printJSON(wire.TopicsReply{Topics: topics})
	}
	if len(topics) == 0 {
		fmt.Fprintln(e.stdout, "No topic state.")
		return nil
	}
	for _, ti := range topics {
		fmt.Fprintf(e.stdout, "Topic %s\n", render.Line(ti.Topic))
		for _, r := range ti.Resources {
			holder := ""
			if r.Holder != nil {
				holder = " by " + r.Holder.Name
			}
			fmt.Fprintf(e.stdout, "  resource %s: %s%s\n", render.Line(r.Resource), render.Line(r.State), render.Line(holder))
		}
		for _, r := range ti.Records {
			fmt.Fprintln(e.stdout, render.TopicRecord(r, r.Message))
		}
		if subs := render.Subscribers(ti.Subscribers); subs != "" {
			fmt.Fprintf(e.stdout, "  subscribers: %s\n", subs)
		}
	}
	return nil
}
