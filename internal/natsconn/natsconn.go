// Package natsconn hands a connection accepted elsewhere (the gateway's
// Unix socket) to the embedded NATS server, which then reads and writes it
// with its own loops, as it does a client it accepted on a listener of its
// own.
//
// The server offers no exported way to do this: it accepts only on the TCP
// listener the broker must not open, or gives an in-process net.Pipe whose
// far end a gateway then had to copy to and from the socket (two goroutines
// and a synchronous hand-off per read and write: the pub/sub floor through
// it carried two thirds of what it does now). HandOver therefore calls the
// server's own createClient, the function its accept loop runs for each
// connection, through go:linkname. The nats-server version is pinned in
// go.mod; a version that renames or changes the function fails the build
// (the symbol is resolved at link time) or TestHandOver, not a user.
package natsconn

import (
	"net"
	"unsafe"

	"github.com/nats-io/nats-server/v2/server"
)

// serverCreateClient is (*server.Server).createClient: it registers conn
// as a client (INFO written, auth timer armed, read and write loops
// started) and returns the *server.client, nil when the server refused it
// (its connection limit; conn then closed).
//
//go:linkname serverCreateClient github.com/nats-io/nats-server/v2/server.(*Server).createClient
func serverCreateClient(s *server.Server, conn net.Conn) unsafe.Pointer

// HandOver makes conn a client connection of srv; from then on the server
// owns it and closes it. A server shutting down closes it at once.
func HandOver(srv *server.Server, conn net.Conn) {
	if serverCreateClient(srv, conn) == nil {
		conn.Close()
	}
}
