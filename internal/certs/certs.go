// Package certs makes and checks the mutual-TLS material of intercom-bridge:
// a private CA, host certificates usable as client and server certificate,
// and a revocation list; and builds the TLS configurations that verify both
// sides against the CA, the expected host name and the revocation list.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/intercom-dev/intercom/internal/atomicfile"
	"github.com/intercom-dev/intercom/internal/bounded"
)

// File names inside a certificate directory.
const (
	CACert = "ca.crt"
	CAKey  = "ca.key"
	CRL    = "ca.crl"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,62}$`)

// ValidName checks a host name.
func ValidName(n string) error {
	if !nameRE.MatchString(n) {
		return fmt.Errorf("invalid host name %q: lowercase letters, digits, '.' and '-'", n)
	}
	return nil
}

// newKey returns a new P-256 key and a random 127-bit serial number for
// the certificate that carries it.
func newKey() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	return key, sn, nil
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return atomicfile.CreateFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

func writeKey(path string, k *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

// Init creates a CA in dir (ca.crt, ca.key). It refuses to overwrite one.
func Init(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, CAKey)); err == nil {
		return fmt.Errorf("a CA already exists in %s; refusing to overwrite it", dir)
	}
	key, sn, err := newKey()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "intercom bridge CA", Organization: []string{"intercom"}},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	if err := writeKey(filepath.Join(dir, CAKey), key); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, CACert), "CERTIFICATE", der, 0o644)
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cert, err := LoadCert(filepath.Join(dir, CACert))
	if err != nil {
		return nil, nil, err
	}
	data, err := bounded.ReadFile(filepath.Join(dir, CAKey), CAKey, maxPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("read CA key: %w", err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, nil, errors.New("read CA key: not PEM")
	}
	key, err := x509.ParseECPrivateKey(b.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("read CA key: %w", err)
	}
	return cert, key, nil
}

// maxPEM is the largest certificate, key or revocation list read.
const maxPEM = 1 << 20

// LoadCert reads one PEM certificate.
func LoadCert(path string) (*x509.Certificate, error) {
	data, err := bounded.ReadFile(path, path, maxPEM)
	if err != nil {
		return nil, fmt.Errorf("read certificate: %w", err)
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("read certificate %s: not a PEM certificate", path)
	}
	return x509.ParseCertificate(b.Bytes)
}

// Issue writes dir/name.crt and dir/name.key, signed by the CA in dir and
// valid from notBefore for validFor (tests pass a past window to make an
// expired certificate).
func Issue(dir, name string, notBefore time.Time, validFor time.Duration) error {
	if err := ValidName(name); err != nil {
		return err
	}
	ca, caKey, err := loadCA(dir)
	if err != nil {
		return err
	}
	key, sn, err := newKey()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"intercom"}},
		DNSNames:     []string{name},
		NotBefore:    notBefore,
		NotAfter:     notBefore.Add(validFor),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("issue %s: %w", name, err)
	}
	crt, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	for _, p := range []string{crt, keyPath} {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%s exists; refusing to overwrite it", p)
		}
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	if err := writePEM(crt, "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return recordIssued(dir, name, sn, tmpl.NotAfter)
}
