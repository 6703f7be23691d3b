package certs

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ca makes a CA in a fresh directory and issues the named hosts, valid now.
func ca(t *testing.T, hosts ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ca")
	if err := Init(dir); err != nil {
		t.Fatalf("Init: %v", err)
	}
	for _, h := range hosts {
		issueNow(t, dir, h)
	}
	return dir
}

func issueNow(t *testing.T, dir, name string) {
	t.Helper()
	if err := Issue(dir, name, time.Now().Add(-time.Minute), 24*time.Hour); err != nil {
		t.Fatalf("Issue %s: %v", name, err)
	}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode()
}

func TestInitWritesCAWithPrivateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub", "ca")
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, dir); m.Perm() != 0o700 || !m.IsDir() {
		t.Errorf("CA dir mode %v, want drwx------", m)
	}
	if m := mode(t, filepath.Join(dir, CAKey)); m.Perm() != 0o600 {
		t.Errorf("ca.key mode %v, want 0600", m)
	}
	if m := mode(t, filepath.Join(dir, CACert)); m.Perm()&0o022 != 0 || m.Perm()&0o400 == 0 {
		t.Errorf("ca.crt mode %v, want owner-readable and not group/world-writable", m)
	}
	crt, err := LoadCert(filepath.Join(dir, CACert))
	if err != nil {
		t.Fatal(err)
	}
	if !crt.IsCA || !crt.BasicConstraintsValid || crt.KeyUsage&x509.KeyUsageCertSign == 0 || crt.KeyUsage&x509.KeyUsageCRLSign == 0 {
		t.Errorf("CA certificate: IsCA %v, constraints %v, key usage %v", crt.IsCA, crt.BasicConstraintsValid, crt.KeyUsage)
	}
	if err := crt.CheckSignatureFrom(crt); err != nil {
		t.Errorf("CA certificate is not self-signed: %v", err)
	}
	if time.Now().Before(crt.NotBefore) || time.Now().After(crt.NotAfter) {
		t.Errorf("CA not valid now: %v..%v", crt.NotBefore, crt.NotAfter)
	}
	if _, _, err := loadCA(dir); err != nil {
		t.Errorf("loadCA: %v", err)
	}

	// A second init refuses to overwrite the CA (its key stays the same).
	before, _ := os.ReadFile(filepath.Join(dir, CAKey))
	if err := Init(dir); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("second Init: %v, want a refusal", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, CAKey))
	if string(before) != string(after) {
		t.Errorf("second Init changed ca.key")
	}
}

func TestIssueWritesHostCertificate(t *testing.T) {
	dir := ca(t)
	nb := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := Issue(dir, "alpha", nb, 48*time.Hour); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, filepath.Join(dir, "alpha.key")); m.Perm() != 0o600 {
		t.Errorf("alpha.key mode %v, want 0600", m)
	}
	if m := mode(t, filepath.Join(dir, "alpha.crt")); m.Perm()&0o022 != 0 {
		t.Errorf("alpha.crt mode %v is group/world-writable", m)
	}
	crt, err := LoadCert(filepath.Join(dir, "alpha.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caCrt, _ := LoadCert(filepath.Join(dir, CACert))
	if crt.Subject.CommonName != "alpha" || len(crt.DNSNames) != 1 || crt.DNSNames[0] != "alpha" {
		t.Errorf("subject %q, DNS names %v; want alpha", crt.Subject.CommonName, crt.DNSNames)
	}
	if crt.IsCA {
		t.Errorf("host certificate is a CA")
	}
	if !crt.NotBefore.Equal(nb) || !crt.NotAfter.Equal(nb.Add(48*time.Hour)) {
		t.Errorf("validity %v..%v, want %v..%v", crt.NotBefore, crt.NotAfter, nb, nb.Add(48*time.Hour))
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCrt)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := crt.Verify(x509.VerifyOptions{Roots: pool, DNSName: "alpha", KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("certificate does not verify for usage %v: %v", usage, err)
		}
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "alpha.crt"), filepath.Join(dir, "alpha.key")); err != nil {
		t.Errorf("key does not match the certificate: %v", err)
	}

	// Refusals: overwrite, bad names, no CA.
	before, _ := os.ReadFile(filepath.Join(dir, "alpha.key"))
	if err := Issue(dir, "alpha", time.Now(), time.Hour); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("re-issue: %v, want a refusal", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "alpha.key")); string(after) != string(before) {
		t.Errorf("re-issue changed alpha.key")
	}
	for _, bad := range []string{"", "Alpha", "../x", "a b", "-x", "a/b", strings.Repeat("a", 64)} {
		if err := Issue(dir, bad, time.Now(), time.Hour); err == nil {
			t.Errorf("Issue(%q) succeeded", bad)
		}
		if err := ValidName(bad); err == nil {
			t.Errorf("ValidName(%q) accepted it", bad)
		}
	}
	for _, good := range []string{"a", "beta", "host-1.example.net", strings.Repeat("a", 63)} {
		if err := ValidName(good); err != nil {
			t.Errorf("ValidName(%q): %v", good, err)
		}
	}
	if err := Issue(t.TempDir(), "beta", time.Now(), time.Hour); err == nil {
		t.Errorf("Issue without a CA succeeded")
	}
}

func TestRevokeWritesCRL(t *testing.T) {
	dir := ca(t, "alpha", "beta", "gamma")
	caCrt, _ := LoadCert(filepath.Join(dir, CACert))
	serialOf := func(h string) string {
		c, err := LoadCert(filepath.Join(dir, h+".crt"))
		if err != nil {
			t.Fatal(err)
		}
		return c.SerialNumber.String()
	}
	revoked := func() (map[string]bool, int64) {
		crl, err := LoadCRL(filepath.Join(dir, CRL), caCrt)
		if err != nil {
			t.Fatalf("LoadCRL: %v", err)
		}
		out := map[string]bool{}
		for _, e := range crl.RevokedCertificateEntries {
			out[e.SerialNumber.String()] = true
		}
		return out, crl.Number.Int64()
	}
	if _, err := os.Stat(filepath.Join(dir, CRL)); !os.IsNotExist(err) {
		t.Fatalf("a CRL exists before any revocation: %v", err)
	}
	if err := Revoke(dir, "beta", 0); err != nil {
		t.Fatal(err)
	}
	r, n1 := revoked()
	if len(r) != 1 || !r[serialOf("beta")] {
		t.Fatalf("after revoking beta: %v, want only beta's serial %s", r, serialOf("beta"))
	}
	if err := Revoke(dir, "beta", 0); err != nil { // idempotent
		t.Fatal(err)
	}
	if r, _ := revoked(); len(r) != 1 {
		t.Fatalf("revoking beta twice: %v", r)
	}
	if err := Revoke(dir, "gamma", 0); err != nil {
		t.Fatal(err)
	}
	r, n2 := revoked()
	if len(r) != 2 || !r[serialOf("beta")] || !r[serialOf("gamma")] || r[serialOf("alpha")] {
		t.Fatalf("after revoking gamma: %v", r)
	}
	if n2 <= n1 {
		t.Errorf("CRL number %d after %d, want it to grow", n2, n1)
	}
	if err := Revoke(dir, "nosuch", 0); err == nil {
		t.Errorf("revoking an unknown host succeeded")
	}
	// A CRL is checked against the CA that signed it.
	other := ca(t)
	otherCrt, _ := LoadCert(filepath.Join(other, CACert))
	if _, err := LoadCRL(filepath.Join(dir, CRL), otherCrt); err == nil {
		t.Errorf("LoadCRL accepted a CRL signed by another CA")
	}
}
