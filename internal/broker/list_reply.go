package broker

import (
	"encoding/json"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/intercom-dev/intercom/pkg/wire"
)

// The list reply, written without reflection: each row by
// wire.AppendSession (empty fields left out), and a row that did not
// change since the last list is copied from the bytes kept for it.

// rowCache keeps the encoding of the rows listed lately: by position in
// the last reply (a list like the last one costs a comparison a row) and by
// session.
type rowCache struct {
	mu   sync.Mutex
	last []encodedRow
	rows map[rowKey]encodedRow
}

type rowKey struct{ id, host string }

type encodedRow struct {
	row wire.Session // as encoded
	enc []byte
}

// appendReply appends the list reply of rows to dst.
func (c *rowCache) appendReply(dst []byte, rows []wire.Session) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rows == nil {
		c.rows = make(map[rowKey]encodedRow, len(rows))
	}
	dst = append(dst, `{"result":{"sessions":[`...)
	for i := range rows {
		var e encodedRow
		if i < len(c.last) && c.last[i].row == rows[i] {
			e = c.last[i]
		} else {
			k := rowKey{rows[i].ID, rows[i].Host}
			var ok bool
			if e, ok = c.rows[k]; !ok || e.row != rows[i] {
				e = encodedRow{row: rows[i], enc: wire.AppendSession(nil, &rows[i])}
				c.rows[k] = e
			}
		}
		if i < len(c.last) {
			c.last[i] = e
		} else {
			c.last = append(c.last, e)
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e.enc...)
	}
	c.last = c.last[:len(rows)]
	// Rows of forgotten sessions (and of lists of other scopes): keep the
	// map about the size of what is listed.
	if len(c.rows) > 2*len(rows)+64 {
		keep := make(map[rowKey]encodedRow, len(rows))
		for _, e := range c.last {
			keep[rowKey{e.row.ID, e.row.Host}] = e
		}
		c.rows = keep
	}
	return append(dst, "]}}"...)
}

// onList answers a list request (what handle does, with the reply encoded
// by rows).
func (b *Broker) onList(m *nats.Msg) {
	var req wire.ListRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		respond(m, wire.Reply[wire.ListReply]{Error: wire.Errorf(wire.CodeBadRequest, "decode %s request: %v", wire.SubjList, err)})
		return
	}
	res, err := b.list(req)
	if err != nil {
		respond(m, wire.Reply[wire.ListReply]{Error: toWireError(err)})
		return
	}
	if m.Reply != "" {
		_ = m.Respond(b.listed.appendReply(make([]byte, 0, 256*len(res.Sessions)+64), res.Sessions))
	}
}
