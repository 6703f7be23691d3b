package store

import "strings"

// Hosts: each bridged host seen once, so that it is listed (unreachable)
// after a restart, under
//
//	rhost/<host>   (empty)

const remoteHostsPrefix = "rhost/"

func remoteHostKey(host string) string { return remoteHostsPrefix + host }

// PutRemoteHost records that host was bridged.
func (t *Txn) PutRemoteHost(host string) error { return t.Set(remoteHostKey(host), nil) }

// DeleteRemoteHost forgets host (absent or not).
func (t *Txn) DeleteRemoteHost(host string) error { return t.Delete(remoteHostKey(host)) }

// EachRemoteHost calls fn with every host recorded.
func (t *Txn) EachRemoteHost(fn func(host string)) {
	t.Keys(remoteHostsPrefix, func(k string) bool {
		fn(strings.TrimPrefix(k, remoteHostsPrefix))
		return true
	})
}
