package store

// The key layout: every key the broker stores, by prefix. Values are JSON
// unless noted. Changing a key or a value's meaning is a format change
// (FormatVersion).
//
//	meta/format                        format version (decimal)
//	meta/seq                           sequence lease (decimal, Sequence)
//	sess/<session>                     a session's record
//	mlog/<n>                           the messages stored by one commit (msglog.go):
//	                                   records of (slot, message), a slot being
//	                                   inbox/<session>/<seq> (a stored, unacknowledged
//	                                   message) or outbox/<host>/<seq> (one waiting
//	                                   for a bridged host)
//	mack/<n>/<k>                       the records of mlog/<n> removed by commit k
//	ackd/<session>/<message id>        an ack of an id not stored (TTL, empty)
//	dedupe/<scope>/<client msg id>     a send's client id -> message id (TTL)
//	pdedupe/<session>/<client msg id>  a publication's client id -> seq (TTL)
//	trec/<topic>\x00<session>          a sender's current topic record
//	tsub/<topic>\x00<session>          a subscription
//	rhost/<host>                       a bridged host once seen (empty)
//	trace/<message id>                 an acked message's timeline (TTL)
//	tev/<message id>/<nanos>-<p|f>     a push or fetch of a message (TTL, empty)
//	hist/<cursor>                      a chunk of kept messages and topic records, under its
//	                                   last one's cursor (TTL; kind byte + framing, s2-packed
//	                                   or not; before chunks: one, kind byte + value)
//	meta/histepoch                     the history's epoch (search indexes rebuild on change)
//	resv/<project>\x00<resource>       a reservation (lease) of a path
//	resvh/<project>\x00<resource>/...  a grant or release of a reservation (history)
//	meta/resvtoken                     the highest fencing token granted (decimal)
//
// <seq>, <n> and <k> are zero-padded to 20 digits. Where each stored
// message is, by id and by box in sequence order, is not stored: the
// message index (msgindex.go) and the boxes (msglog.go) are rebuilt in
// memory from the log entries and their ack records. Format 1 and 2 stores
// kept each message under its own inbox/ or outbox/ key; Open moves them
// into the log (format.go).
//
// Each family belongs to one file, which alone builds and reads its keys
// and values: sess/ sessions.go; mlog/, mack/ msglog.go (slots: messages.go); ackd/,
// dedupe/, pdedupe/ dedupe.go; trec/, tsub/ topics.go; rhost/ hosts.go;
// trace/, tev/ traces.go; hist/, meta/histepoch history.go and history_chunk.go; resv/, resvh/,
// meta/resvtoken reservations.go; meta/format, meta/seq format.go and seq.go.

// formatKey holds the store's format version as a decimal string. Stores
// written before the key existed carry none: their layout is format 1.
const formatKey = "meta/format"

// seqKey holds the highest sequence number leased (Sequence).
const seqKey = "meta/seq"
