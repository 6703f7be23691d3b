package bridge

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/intercom-dev/intercom/internal/certs"
	"github.com/intercom-dev/intercom/pkg/wire"
)

func TestSubjectsRoundTrip(t *testing.T) {
	for _, c := range []struct{ to, from string }{{"alpha", "beta"}, {"dev.box-1", "ci.runner"}, {"a", "b.c.d"}} {
		s := reqSubject(c.to, c.from, opDeliver)
		to, from, op, ok := parseReq(s)
		if !ok || to != c.to || from != c.from || op != opDeliver {
			t.Errorf("parseReq(%q) = %q %q %q %v", s, to, from, op, ok)
		}
	}
	for _, bad := range []string{"icb.req.alpha.beta", "icb.req.alpha.beta.deliver.x", "icb.pres.alpha", "x.req.a.b.c"} {
		if _, _, _, ok := parseReq(bad); ok {
			t.Errorf("parseReq(%q) accepted it", bad)
		}
	}
}

// The generated nats-server configuration parses, maps certificates to
// users (verify_and_map) and gives each host exactly Permissions(host).
func TestNATSConfigMatchesPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	if err := certs.Init(dir); err != nil {
		t.Fatal(err)
	}
	if err := certs.Issue(dir, "nats", time.Now().Add(-time.Minute), time.Hour); err != nil {
		t.Fatal(err)
	}
	text, err := NATSConfig(ServerConfig{Name: "n1", Listen: "127.0.0.1:4222", Cert: filepath.Join(dir, "nats.crt"), Key: filepath.Join(dir, "nats.key"),
		CA: filepath.Join(dir, certs.CACert), Hosts: []string{"gamma", "alpha", "dev.box"}, Cluster: "127.0.0.1:6222", Routes: []string{"127.0.0.1:6223"}})
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := &server.Options{}
	if err := opts.ProcessConfigFile(conf); err != nil {
		t.Fatalf("nats-server refuses the configuration: %v\n%s", err, text)
	}
	if !opts.TLSMap || opts.TLSConfig == nil || opts.TLSConfig.ClientAuth != tls.RequireAndVerifyClientCert || opts.TLSConfig.MinVersion != tls.VersionTLS13 {
		t.Errorf("TLS: map %v, config %+v", opts.TLSMap, opts.TLSConfig)
	}
	if opts.MaxPayload != wire.MaxLinkPayload || opts.MaxPending != pendingBytes || opts.MaxSubs != subsPerConn || opts.Cluster.Port != 6222 {
		t.Errorf("limits: payload %d, pending %d, subs %d, cluster port %d", opts.MaxPayload, opts.MaxPending, opts.MaxSubs, opts.Cluster.Port)
	}
	if len(opts.Users) != 3 {
		t.Fatalf("users %v", opts.Users)
	}
	for _, u := range opts.Users {
		want := Permissions(u.Username)
		got := u.Permissions
		if got == nil || !slices.Equal(got.Publish.Allow, want.Publish.Allow) || !slices.Equal(got.Subscribe.Allow, want.Subscribe.Allow) ||
			got.Response == nil || got.Response.MaxMsgs != want.Response.MaxMsgs || got.Response.Expires != want.Response.Expires {
			t.Errorf("user %s: permissions %+v, want %+v", u.Username, got, want)
		}
		for _, s := range append(got.Publish.Allow, got.Subscribe.Allow...) {
			if s == ">" || s == "*" {
				t.Errorf("user %s may use %q", u.Username, s)
			}
		}
	}
}

func TestJoinURLs(t *testing.T) {
	for _, c := range []struct {
		in, urls string
		first    bool
		bad      bool
	}{
		{"hub:7422", "tls://hub:7422", true, false},
		{"tls://n1:4222,tls://n2:4222", "tls://n1:4222,tls://n2:4222", false, false},
		{"nats://n1:4222", "nats://n1:4222", false, false},
		{"hub:7422,tls://n1:4222", "", false, true},
		{"http://x:1", "", false, true},
		{"tls://", "", false, true},
	} {
		urls, first, err := joinURLs(c.in)
		if (err != nil) != c.bad || (!c.bad && (urls != c.urls || first != c.first)) {
			t.Errorf("joinURLs(%q) = %q %v %v", c.in, urls, first, err)
		}
	}
}
