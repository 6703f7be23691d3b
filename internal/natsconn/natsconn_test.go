package natsconn

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// dialer connects a NATS client to a Unix listener of its own and hands
// the accepted end to the server, as the gateway does.
type dialer struct {
	srv *server.Server
	ln  net.Listener
}

func (d dialer) Dial(_, _ string) (net.Conn, error) {
	c, err := net.Dial("unix", d.ln.Addr().String())
	if err != nil {
		return nil, err
	}
	s, err := d.ln.Accept()
	if err != nil {
		c.Close()
		return nil, err
	}
	HandOver(d.srv, s)
	return c, nil
}

// Two clients whose connections were handed to the server talk through
// it: a request is answered, and the server counts them as its clients;
// once they close, it has none.
func TestHandOver(t *testing.T) {
	srv, err := server.NewServer(&server.Options{DontListen: true, NoSigs: true, NoLog: true, NoSystemAccount: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	ln, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	connect := func(name string) *nats.Conn {
		nc, err := nats.Connect("nats://handed", nats.SetCustomDialer(dialer{srv, ln}), nats.Name(name), nats.NoReconnect())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return nc
	}
	a, b := connect("a"), connect("b")
	if _, err := b.Subscribe("q", func(m *nats.Msg) { _ = m.Respond(append([]byte("re: "), m.Data...)) }); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	m, err := a.Request("q", []byte("hello"), 10*time.Second)
	if err != nil || string(m.Data) != "re: hello" {
		t.Fatalf("request through handed connections: %v, %v", m, err)
	}
	if n := srv.NumClients(); n != 2 {
		t.Fatalf("the server has %d clients, want the 2 handed to it", n)
	}
	a.Close()
	b.Close()
	deadline := time.Now().Add(10 * time.Second)
	for srv.NumClients() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server still has %d clients after both closed", srv.NumClients())
		}
		time.Sleep(2 * time.Millisecond)
	}
}
