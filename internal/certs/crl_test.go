package certs

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The live list: a revocation made after the bridge loaded its material
// bites once the file is reloaded (no restart); a list past its NextUpdate
// refuses everyone; a list that vanishes or turns unreadable keeps the last
// good one; a list that appears later is picked up.
func TestRevocationLive(t *testing.T) {
	dir := ca(t, "alpha", "beta", "gamma")
	l, err := material(dir, "alpha", "beta").Load()
	if err != nil {
		t.Fatal(err)
	}
	beta, _ := LoadCert(filepath.Join(dir, "beta.crt"))
	gamma, _ := LoadCert(filepath.Join(dir, "gamma.crt"))
	rev := l.Revocation
	if st := rev.Status(); st.Loaded || rev.Check(beta) != nil {
		t.Fatalf("no CRL yet: %+v, %v", st, rev.Check(beta))
	}
	if changed, err := rev.Reload(); changed || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reload without a file: %v %v", changed, err)
	}
	if err := Revoke(dir, "beta", 0); err != nil {
		t.Fatal(err)
	}
	if changed, err := rev.Reload(); !changed || err != nil {
		t.Fatalf("reload after revoking: %v %v", changed, err)
	}
	if err := rev.Check(beta); err == nil || !strings.Contains(err.Error(), `certificate of "beta" is revoked`) {
		t.Fatalf("beta after the reload: %v", err)
	}
	if err := rev.Check(gamma); err != nil {
		t.Fatalf("gamma: %v", err)
	}
	if changed, _ := rev.Reload(); changed {
		t.Fatalf("an unchanged file reloaded")
	}
	// Unreadable, then gone: the last good list stays.
	if err := os.WriteFile(filepath.Join(dir, CRL), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rev.Reload(); err == nil || rev.Check(beta) == nil {
		t.Fatalf("garbage CRL: reload %v, beta %v", err, rev.Check(beta))
	}
	os.Remove(filepath.Join(dir, CRL))
	if _, err := rev.Reload(); err == nil || rev.Check(beta) == nil {
		t.Fatalf("vanished CRL: reload %v, beta %v", err, rev.Check(beta))
	}
	// A list past its NextUpdate refuses every peer; a refreshed one (same
	// entries) only the revoked.
	if err := Revoke(dir, "beta", -time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := rev.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := rev.Check(gamma); !errors.Is(err, ErrStaleCRL) || !rev.Status().Stale {
		t.Fatalf("stale list: gamma %v, status %+v", err, rev.Status())
	}
	if err := RefreshCRL(dir, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := rev.Reload(); err != nil || rev.Check(gamma) != nil || rev.Check(beta) == nil {
		t.Fatalf("refreshed list: %v, gamma %v, beta %v", err, rev.Check(gamma), rev.Check(beta))
	}
	if st := rev.Status(); st.Revoked != 1 || st.Stale || st.NextUpdate.Before(time.Now()) {
		t.Fatalf("status %+v", st)
	}
}

func TestPeersAndHostName(t *testing.T) {
	p := Peers{Names: []string{"beta", "gamma"}}
	if !p.Allows("beta") || p.Allows("delta") || !(Peers{Any: true}).Allows("delta") {
		t.Errorf("Allows")
	}
	if (Peers{}).Validate() == nil || (Peers{Names: []string{"Bad Name"}}).Validate() == nil || p.Validate() != nil {
		t.Errorf("Validate")
	}
	if err := ExpectOneOf(p)("delta"); err == nil || !strings.Contains(err.Error(), `expected one of "beta", "gamma"`) {
		t.Errorf("ExpectOneOf: %v", err)
	}
	dir := ca(t, "beta")
	leaf, _ := LoadCert(filepath.Join(dir, "beta.crt"))
	if h, err := HostName(leaf); h != "beta" || err != nil {
		t.Errorf("HostName: %q %v", h, err)
	}
	leaf.DNSNames = []string{"other"}
	if _, err := HostName(leaf); err == nil {
		t.Errorf("HostName accepted a CN that is not a DNS name")
	}
}

// CRL numbers never go back (issue 29): a validly signed older list copied
// over the current one is refused loudly and the list in force stays (on
// main it was taken, and a revoked host linked again); a lost ca.crl does
// not restart the numbers (the CA records the last one).
func TestOlderCRLRefused(t *testing.T) {
	dir := ca(t, "alpha", "beta")
	if err := RefreshCRL(dir, 0); err != nil {
		t.Fatal(err)
	}
	older, err := os.ReadFile(filepath.Join(dir, CRL))
	if err != nil {
		t.Fatal(err)
	}
	l, err := material(dir, "alpha", "beta").Load()
	if err != nil {
		t.Fatal(err)
	}
	rev := l.Revocation
	beta, _ := LoadCert(filepath.Join(dir, "beta.crt"))
	if err := Revoke(dir, "beta", 0); err != nil {
		t.Fatal(err)
	}
	if changed, err := rev.Reload(); !changed || err != nil || rev.Check(beta) == nil {
		t.Fatalf("reload after revoking: %v %v, beta %v", changed, err, rev.Check(beta))
	}
	if err := os.WriteFile(filepath.Join(dir, CRL), older, 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := rev.Reload(); changed || !errors.Is(err, ErrOlderCRL) || !strings.Contains(err.Error(), "CRL number 1 is not above 2") {
		t.Fatalf("older list: %v %v", changed, err)
	}
	if rev.Check(beta) == nil || rev.Status().Number != "2" {
		t.Fatalf("after the older list: beta %v, status %+v", rev.Check(beta), rev.Status())
	}
	// ca.crl lost at the CA: the next list is numbered 3, and taken.
	os.Remove(filepath.Join(dir, CRL))
	if err := Revoke(dir, "beta", 0); err != nil {
		t.Fatal(err)
	}
	if changed, err := rev.Reload(); !changed || err != nil || rev.Status().Number != "3" || rev.Check(beta) == nil {
		t.Fatalf("the list after a lost ca.crl: %v %v %+v", changed, err, rev.Status())
	}
}

// Revoking a host revokes every certificate the CA issued to it (issue
// 29): one stolen before a reissue too (on main only the serial in the
// current HOST.crt was revoked).
func TestRevokeByNameRevokesEveryCertificate(t *testing.T) {
	dir := ca(t, "alpha", "beta")
	stolen, _ := LoadCert(filepath.Join(dir, "beta.crt"))
	for _, f := range []string{"beta.crt", "beta.key"} { // the reissue
		if err := os.Rename(filepath.Join(dir, f), filepath.Join(dir, "old-"+f)); err != nil {
			t.Fatal(err)
		}
	}
	issueNow(t, dir, "beta")
	current, _ := LoadCert(filepath.Join(dir, "beta.crt"))
	if err := Revoke(dir, "beta", 0); err != nil {
		t.Fatal(err)
	}
	l, err := material(dir, "alpha", "beta").Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := RefreshCRL(dir, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Revocation.Reload(); err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]*x509.Certificate{"the stolen certificate": stolen, "the current one": current} {
		if err := l.Revocation.Check(c); err == nil {
			t.Errorf("%s of beta is not revoked", what)
		}
	}
	alpha, _ := LoadCert(filepath.Join(dir, "alpha.crt"))
	if err := l.Revocation.Check(alpha); err != nil {
		t.Errorf("alpha: %v", err)
	}
	if err := Revoke(dir, "nobody", 0); err == nil {
		t.Errorf("revoking a name the CA never issued to: accepted")
	}
}
