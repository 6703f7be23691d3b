package doctor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/intercom-dev/intercom/internal/schema"
	"github.com/intercom-dev/intercom/internal/spawn"
	"github.com/intercom-dev/intercom/pkg/intercom"
)

// brokerCheck is the broker's row: whether its socket answers (without
// starting one) and which version it runs.
func brokerCheck(ctx context.Context, o *Options) schema.DoctorCheck {
	row := schema.DoctorCheck{Harness: "broker", Check: "broker"}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	c, err := intercom.Connect(ctx, intercom.Options{Home: o.IntercomHome, Socket: o.Socket, NoSpawn: true, ExistingHome: true, Timeout: 5 * time.Second, Name: "intercom-doctor"})
	switch {
	case errors.Is(err, spawn.ErrNoBroker), errors.Is(err, spawn.ErrHomeGone), errors.Is(err, intercom.ErrHomeGone):
		row.Status, row.Detail = None, "not running (the first intercom command starts it)"
		return row
	case err != nil:
		row.Status, row.Detail = Fail, err.Error()
		row.Fix = "see docs/operations.md; removing a stale socket directory lets the next command start a broker"
		return row
	}
	defer c.Close()
	row.Path = c.Socket()
	v, err := c.BrokerVersion(ctx)
	if err != nil {
		row.Status, row.Detail = Fail, "socket reachable, but the broker does not answer: "+err.Error()
		row.Fix = "stop the broker process (it restarts on the next command)"
		return row
	}
	switch {
	case v == "":
		row.Status, row.Detail = Warn, "answers; an older broker that does not report its version"
	case v != o.Version:
		row.Status, row.Detail = Warn, fmt.Sprintf("answers; runs %s, this intercom is %s", v, o.Version)
	default:
		row.Status, row.Detail = OK, "answers; version "+v
	}
	if row.Status == Warn {
		row.Fix = "restart intercom's long-running processes (attach, ui, the harnesses' MCP servers): the broker idles out and the next command starts this version"
	}
	return row
}
