package certs

import (
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
