package broker

import (
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

func badgerEntry(key, val string, ttl time.Duration) *badger.Entry {
	return badger.NewEntry([]byte(key), []byte(val)).WithTTL(ttl)
}
