package intercomcmd

import (
	"fmt"
)

// ConfigCmd prints the effective configuration.
type ConfigCmd struct{}

// Help shows examples.
func (ConfigCmd) Help() string {
	return `Prints the configuration in effect: $INTERCOM_HOME/config.json over the
defaults (docs/operations.md lists the keys). Harness extensions read it
(Pi: confirmSend, shortcut); with --json the keys are those of config.json.

Examples:
  intercom config
  intercom config --json`
}

// Run prints.
func (ConfigCmd) Run(e *env) error {
	if e.g.JSON {
		c := e.cfg
		if c.BrokerArgs == nil {
			c.BrokerArgs = []string{} // the schema's array, also when empty
		}
		return e.printJSON(c)
	}
	c := e.cfg
	fmt.Fprintf(e.stdout, "confirmSend   %t\nreplyHint     %t\naskTimeoutMs  %d\nsendTimeoutMs %d\nlistTimeoutMs %d\nstatus        %q\nshortcut      %q\nidleExitMs    %d\nforgetAfterMs %d\n",
		c.ConfirmSend, c.ReplyHint, c.AskTimeoutMs, c.SendTimeoutMs, c.ListTimeoutMs, c.Status, c.Shortcut, c.IdleExitMs, c.ForgetAfterMs)
	if c.BrokerCommand != "" {
		fmt.Fprintf(e.stdout, "brokerCommand %q %q\n", c.BrokerCommand, c.BrokerArgs)
	}
	return nil
}
