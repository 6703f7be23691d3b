package broker

import (
	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// respondSent answers an accepted send with reply, written without
// reflection (wire.AppendSendReply); a lean request (wire.SendRequest.Lean)
// gets only the recipient's id and name.
func respondSent(m *nats.Msg, req *wire.SendRequest, reply wire.SendReply) {
	if m.Reply == "" {
		return
	}
	if req.Lean {
		reply.To = wire.LeanRecipient(reply.To)
	}
	data := wire.AppendSendReply(make([]byte, 0, 512), &reply)
	if answeredInBatch(m, data) {
		return
	}
	_ = m.Respond(data)
}
