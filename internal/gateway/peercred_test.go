package gateway

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// Both ends of a connection in this process see this process's uid and pid.
func TestPeerCredOfOwnConnection(t *testing.T) {
	t.Parallel()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.DialUnix("unix", nil, ln.Addr().(*net.UnixAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	for name, c := range map[string]*net.UnixConn{"server side": server, "client side": client} {
		uid, pid, err := PeerCred(c)
		if err != nil || uid != os.Getuid() || pid != os.Getpid() {
			t.Errorf("%s: PeerCred = uid %d pid %d, %v; want uid %d pid %d", name, uid, pid, err, os.Getuid(), os.Getpid())
		}
	}
	server.Close()
	if _, _, err := PeerCred(server); err == nil {
		t.Error("PeerCred of a closed connection succeeded")
	}
}
