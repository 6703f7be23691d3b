package bridgecmd

import (
	"fmt"
	"github.com/intercom-dev/intercom/internal/kongrun"

	"github.com/intercom-dev/intercom/internal/certs"
	"github.com/intercom-dev/intercom/pkg/intercom"
	"github.com/intercom-dev/intercom/pkg/wire"
)

// PurgeCmd drops what a bridged host left here.
type PurgeCmd struct {
	Host   string `arg:"" help:"The bridged host." placeholder:"HOST"`
	Outbox bool   `help:"Also drop our messages still waiting to be forwarded to it."`
	Home   string `env:"INTERCOM_HOME" help:"State directory of the local broker." placeholder:"DIR"`
}

// Help shows examples.
func (PurgeCmd) Help() string {
	return `Drops everything HOST left on this machine: its unread messages in local
inboxes, its sessions' topic records and subscriptions, their asks, and its
sessions from the list. With --outbox, also our messages still queued for it.
A host that is still linked lists its sessions again at its next report;
revoke its certificate first to keep it out.

Examples:
  intercom-bridge purge beta
  intercom-bridge --json purge old-ci-runner --outbox`
}

// Run purges.
func (p *PurgeCmd) Run(e *env) error {
	if err := certs.ValidName(p.Host); err != nil {
		return kongrun.Usage(err)
	}
	c, err := intercom.Connect(e.ctx, intercom.Options{Home: p.Home, NoSpawn: true, Name: "intercom-bridge-purge", Logger: e.log})
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	defer c.Close()
	res, err := intercom.Call[wire.BridgePurgeReply](e.ctx, c, wire.SubjBridgePurge, wire.BridgePurge{Host: p.Host, Outbox: p.Outbox})
	if err != nil {
		return fmt.Errorf("purge %s: %w", p.Host, err)
	}
	text := fmt.Sprintf("purged %s: %d messages, %d topic records, %d subscriptions", res.Host, res.Messages, res.Records, res.Subscriptions)
	if p.Outbox {
		text += fmt.Sprintf(", %d outbox messages", res.Outbox)
	}
	return e.print(res, text)
}
