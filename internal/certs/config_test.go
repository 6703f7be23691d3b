package certs

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// side is one end of a link: its files and the peer it expects.
type side struct {
	Material
	Peer string
}

// material names host's files in dir, expecting peer on the other side.
func material(dir, host, peer string) side {
	return side{Material{
		Cert: filepath.Join(dir, host+".crt"), Key: filepath.Join(dir, host+".key"),
		CA: filepath.Join(dir, CACert)}, peer}
}

// Config loads the material and builds the listening (server) or joining
// configuration expecting s.Peer.
func (s side) Config(server bool) (*tls.Config, error) {
	if err := ValidName(s.Peer); err != nil {
		return nil, err
	}
	l, err := s.Load()
	if err != nil {
		return nil, err
	}
	if server {
		return l.ServerConfig(ExpectOneOf(Peers{Names: []string{s.Peer}})), nil
	}
	return l.ClientConfig(s.Peer, nil), nil
}

func config(t *testing.T, m side, server bool) *tls.Config {
	t.Helper()
	cfg, err := m.Config(server)
	if err != nil {
		t.Fatalf("Config(server=%v) for %s: %v", server, m.Cert, err)
	}
	return cfg
}

// handshake runs a TLS server with srv and a client with cli over a real
// loopback TCP connection, then exchanges one application message each way.
// It returns each side's first error (nil when the side completed both the
// handshake and the exchange).
func handshake(t *testing.T, srv, cli *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		c := tls.Server(raw, srv)
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if err := c.Handshake(); err != nil {
			done <- err
			return
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil {
			done <- err
			return
		}
		if string(buf) != "ping" {
			done <- errors.New("server read " + string(buf))
			return
		}
		_, err = c.Write([]byte("pong"))
		done <- err
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, cli)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	clientErr = func() error {
		defer c.Close()
		if err := c.Handshake(); err != nil {
			return err
		}
		// TLS 1.3: the server checks the client certificate after the
		// client finished; a refusal shows up on the client's first read.
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if string(buf) != "pong" {
			return errors.New("client read " + string(buf))
		}
		return nil
	}()
	return <-done, clientErr
}

func TestConfigAcceptsMatchingPeers(t *testing.T) {
	dir := ca(t, "alpha", "beta")
	srv := config(t, material(dir, "alpha", "beta"), true)
	cli := config(t, material(dir, "beta", "alpha"), false)
	if srv.MinVersion != tls.VersionTLS13 || cli.MinVersion != tls.VersionTLS13 {
		t.Errorf("MinVersion %x/%x, want TLS 1.3", srv.MinVersion, cli.MinVersion)
	}
	if srv.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("server ClientAuth %v, want RequireAndVerifyClientCert", srv.ClientAuth)
	}
	serr, cerr := handshake(t, srv, cli)
	if serr != nil || cerr != nil {
		t.Fatalf("matching peers: server %v, client %v", serr, cerr)
	}
	// A revocation of someone else changes nothing.
	issueNow(t, dir, "gamma")
	if err := Revoke(dir, "gamma", 0); err != nil {
		t.Fatal(err)
	}
	serr, cerr = handshake(t, config(t, material(dir, "alpha", "beta"), true), config(t, material(dir, "beta", "alpha"), false))
	if serr != nil || cerr != nil {
		t.Fatalf("after revoking gamma: server %v, client %v", serr, cerr)
	}
}

// The server refuses a client whose certificate is wrong; nothing reaches
// the application on either side.
func TestConfigServerRefusesBadClients(t *testing.T) {
	dir := ca(t, "alpha", "beta", "gamma")
	srv := func() *tls.Config { return config(t, material(dir, "alpha", "beta"), true) }

	// Another CA's certificate named beta (the client trusts the real CA).
	foreign := ca(t, "beta")
	m := material(foreign, "beta", "alpha")
	m.CA = filepath.Join(dir, CACert)
	expired := filepath.Join(t.TempDir(), "exp")
	if err := os.MkdirAll(expired, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CACert, CAKey} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		if err := os.WriteFile(filepath.Join(expired, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := Issue(expired, "beta", time.Now().Add(-48*time.Hour), time.Hour); err != nil {
		t.Fatal(err)
	}
	notYet := filepath.Join(t.TempDir(), "future")
	if err := os.MkdirAll(notYet, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CACert, CAKey} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		if err := os.WriteFile(filepath.Join(notYet, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := Issue(notYet, "beta", time.Now().Add(48*time.Hour), time.Hour); err != nil {
		t.Fatal(err)
	}
	noCert := config(t, material(dir, "beta", "alpha"), false)
	noCert.Certificates = nil

	for _, c := range []struct {
		name string
		cli  *tls.Config
		want string
	}{
		{"unknown CA", config(t, m, false), "unknown authority"},
		{"wrong name", config(t, material(dir, "gamma", "alpha"), false), `peer certificate names "gamma", expected "beta"`},
		{"expired", config(t, side{Material{Cert: filepath.Join(expired, "beta.crt"), Key: filepath.Join(expired, "beta.key"), CA: filepath.Join(dir, CACert)}, "alpha"}, false), "expired"},
		{"not yet valid", config(t, side{Material{Cert: filepath.Join(notYet, "beta.crt"), Key: filepath.Join(notYet, "beta.key"), CA: filepath.Join(dir, CACert)}, "alpha"}, false), "not yet valid"},
		{"no client certificate", noCert, "certificate"},
	} {
		serr, cerr := handshake(t, srv(), c.cli)
		if serr == nil || !strings.Contains(serr.Error(), c.want) {
			t.Errorf("%s: server error %v, want one mentioning %q", c.name, serr, c.want)
		}
		if cerr == nil {
			t.Errorf("%s: the client completed an exchange with a refusing server", c.name)
		}
	}

	// Revoked: the CRL beside the CA is honoured without --crl ...
	if err := Revoke(dir, "beta", 0); err != nil {
		t.Fatal(err)
	}
	serr, cerr := handshake(t, srv(), config(t, material(dir, "beta", "alpha"), false))
	if serr == nil || !strings.Contains(serr.Error(), `certificate of "beta" is revoked`) || cerr == nil {
		t.Errorf("revoked (CRL beside CA): server %v, client %v", serr, cerr)
	}
	// ... and an explicit --crl elsewhere too.
	moved := filepath.Join(t.TempDir(), "moved.crl")
	if err := os.Rename(filepath.Join(dir, CRL), moved); err != nil {
		t.Fatal(err)
	}
	if serr, cerr := handshake(t, srv(), config(t, material(dir, "beta", "alpha"), false)); serr != nil || cerr != nil {
		t.Fatalf("control: with the CRL moved away beta is accepted again, got server %v, client %v", serr, cerr)
	}
	sm := material(dir, "alpha", "beta")
	sm.CRL = moved
	serr, cerr = handshake(t, config(t, sm, true), config(t, material(dir, "beta", "alpha"), false))
	if serr == nil || !strings.Contains(serr.Error(), "revoked") || cerr == nil {
		t.Errorf("revoked (--crl): server %v, client %v", serr, cerr)
	}
}

// The client (join) refuses a server whose certificate is wrong.
func TestConfigClientRefusesBadServers(t *testing.T) {
	dir := ca(t, "alpha", "beta", "gamma")
	cli := func() *tls.Config { return config(t, material(dir, "beta", "alpha"), false) }

	foreign := ca(t, "alpha")
	fm := material(foreign, "alpha", "beta")
	fm.CA = filepath.Join(dir, CACert)

	expired := filepath.Join(t.TempDir(), "exp")
	if err := os.MkdirAll(expired, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CACert, CAKey} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		if err := os.WriteFile(filepath.Join(expired, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := Issue(expired, "alpha", time.Now().Add(-48*time.Hour), time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		srv  *tls.Config
		want string
	}{
		{"unknown CA", config(t, fm, true), "unknown authority"},
		{"wrong name", config(t, material(dir, "gamma", "beta"), true), "gamma"},
		{"expired", config(t, side{Material{Cert: filepath.Join(expired, "alpha.crt"), Key: filepath.Join(expired, "alpha.key"), CA: filepath.Join(dir, CACert)}, "beta"}, true), "expired"},
	} {
		serr, cerr := handshake(t, c.srv, cli())
		if cerr == nil || !strings.Contains(cerr.Error(), c.want) {
			t.Errorf("%s: client error %v, want one mentioning %q", c.name, cerr, c.want)
		}
		if serr == nil {
			t.Errorf("%s: the server completed an exchange with a refusing client", c.name)
		}
	}

	// A certificate that carries the expected name only as a DNS name is
	// not enough: the common name must match too. (Issue always sets both;
	// a peer expecting "gamma" refuses alpha's.)
	cm := material(dir, "beta", "gamma")
	serr, cerr := handshake(t, config(t, material(dir, "alpha", "beta"), true), config(t, cm, false))
	if cerr == nil || serr == nil {
		t.Errorf("client expecting gamma accepted alpha: server %v, client %v", serr, cerr)
	}

	if err := Revoke(dir, "alpha", 0); err != nil {
		t.Fatal(err)
	}
	serr, cerr = handshake(t, config(t, material(dir, "alpha", "beta"), true), cli())
	if cerr == nil || !strings.Contains(cerr.Error(), `certificate of "alpha" is revoked`) || serr == nil {
		t.Errorf("revoked server: server %v, client %v", serr, cerr)
	}
}

// TLS 1.2 and below are refused by both sides.
func TestConfigTLS13Only(t *testing.T) {
	dir := ca(t, "alpha", "beta")
	cli := config(t, material(dir, "beta", "alpha"), false)
	cli.MinVersion, cli.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	serr, cerr := handshake(t, config(t, material(dir, "alpha", "beta"), true), cli)
	if serr == nil || cerr == nil || !strings.Contains(serr.Error(), "version") {
		t.Errorf("TLS 1.2 client: server %v, client %v; want a protocol version refusal", serr, cerr)
	}
	srv := config(t, material(dir, "alpha", "beta"), true)
	srv.MinVersion, srv.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	serr, cerr = handshake(t, srv, config(t, material(dir, "beta", "alpha"), false))
	if serr == nil || cerr == nil || !strings.Contains(cerr.Error(), "version") {
		t.Errorf("TLS 1.2 server: server %v, client %v; want a protocol version refusal", serr, cerr)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := ca(t, "alpha", "beta")
	other := ca(t)
	good := material(dir, "alpha", "beta")
	if _, err := good.Config(true); err != nil {
		t.Fatalf("control: %v", err)
	}
	badPeer := good
	badPeer.Peer = "Not A Name"
	missingKey := good
	missingKey.Key = filepath.Join(dir, "nosuch.key")
	mismatched := good
	mismatched.Key = filepath.Join(dir, "beta.key")
	noCA := good
	noCA.CA = filepath.Join(dir, "nosuch.crt")
	missingCRL := good
	missingCRL.CRL = filepath.Join(dir, "nosuch.crl")
	if err := Revoke(other, "x", 0); err == nil {
		t.Fatal("revoking a host that was never issued succeeded")
	}
	issueNow(t, other, "x")
	if err := Revoke(other, "x", 0); err != nil {
		t.Fatal(err)
	}
	foreignCRL := good
	foreignCRL.CRL = filepath.Join(other, CRL)
	for name, m := range map[string]side{
		"invalid peer name":   badPeer,
		"missing key":         missingKey,
		"key of another host": mismatched,
		"missing CA":          noCA,
		"missing --crl":       missingCRL,
		"CRL of another CA":   foreignCRL,
	} {
		for _, server := range []bool{true, false} {
			if _, err := m.Config(server); err == nil {
				t.Errorf("%s (server=%v): Config succeeded", name, server)
			}
		}
	}
	// A CRL beside the CA that another CA signed is an error, not ignored.
	data, _ := os.ReadFile(filepath.Join(other, CRL))
	if err := os.WriteFile(filepath.Join(dir, CRL), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := good.Config(true); err == nil {
		t.Errorf("a foreign ca.crl beside the CA was accepted silently")
	}
}
