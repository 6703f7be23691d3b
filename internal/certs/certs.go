// Package certs makes and checks the mutual-TLS material of intercom-bridge:
// a private CA, host certificates usable as client and server certificate,
// and a revocation list; and builds the TLS configurations that verify both
// sides against the CA, the expected host name and the revocation list.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"time"

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

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	sn, err := serial()
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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	sn, err := serial()
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
	return writePEM(crt, "CERTIFICATE", der, 0o644)
}

// Revoke adds name's certificate to dir/ca.crl.
func Revoke(dir, name string) error {
	ca, caKey, err := loadCA(dir)
	if err != nil {
		return err
	}
	cert, err := LoadCert(filepath.Join(dir, name+".crt"))
	if err != nil {
		return err
	}
	var entries []x509.RevocationListEntry
	number := big.NewInt(1)
	if old, err := LoadCRL(filepath.Join(dir, CRL), ca); err == nil {
		entries = old.RevokedCertificateEntries
		number = new(big.Int).Add(old.Number, big.NewInt(1))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if e.SerialNumber.Cmp(cert.SerialNumber) == 0 {
			return nil
		}
	}
	entries = append(entries, x509.RevocationListEntry{SerialNumber: cert.SerialNumber, RevocationTime: time.Now()})
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: number, ThisUpdate: time.Now(), NextUpdate: time.Now().AddDate(1, 0, 0),
		RevokedCertificateEntries: entries,
	}, ca, caKey)
	if err != nil {
		return fmt.Errorf("revoke %s: %w", name, err)
	}
	tmp := filepath.Join(dir, CRL+".tmp")
	os.Remove(tmp)
	if err := writePEM(tmp, "X509 CRL", der, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, CRL))
}

// LoadCRL reads and verifies a revocation list signed by ca.
func LoadCRL(path string, ca *x509.Certificate) (*x509.RevocationList, error) {
	data, err := bounded.ReadFile(path, path, maxPEM)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, fmt.Errorf("read %s: not PEM", path)
	}
	crl, err := x509.ParseRevocationList(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if err := crl.CheckSignatureFrom(ca); err != nil {
		return nil, fmt.Errorf("revocation list %s is not signed by the CA: %w", path, err)
	}
	return crl, nil
}

// Material names the files a bridge side uses.
type Material struct {
	Cert, Key, CA string
	CRL           string // "" looks for ca.crl beside the CA
	Peer          string // the expected certificate name of the other side
}

// Config builds the TLS 1.3 configuration for one side. Both sides present
// their certificate and verify the other's against the CA, the expected
// peer name and the revocation list.
func (m Material) Config(server bool) (*tls.Config, error) {
	if err := ValidName(m.Peer); err != nil {
		return nil, fmt.Errorf("--peer: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(m.Cert, m.Key)
	if err != nil {
		return nil, fmt.Errorf("load certificate and key: %w", err)
	}
	ca, err := LoadCert(m.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	crlPath := m.CRL
	if crlPath == "" {
		crlPath = filepath.Join(filepath.Dir(m.CA), CRL)
	}
	revoked := map[string]bool{}
	if crl, err := LoadCRL(crlPath, ca); err == nil {
		for _, e := range crl.RevokedCertificateEntries {
			revoked[e.SerialNumber.String()] = true
		}
	} else if m.CRL != "" || !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{pair},
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("refused: the peer presented no certificate")
			}
			leaf := cs.PeerCertificates[0]
			if revoked[leaf.SerialNumber.String()] {
				return fmt.Errorf("refused: certificate of %q is revoked", leaf.Subject.CommonName)
			}
			if err := leaf.VerifyHostname(m.Peer); err != nil || leaf.Subject.CommonName != m.Peer {
				return fmt.Errorf("refused: peer certificate names %q, expected %q", leaf.Subject.CommonName, m.Peer)
			}
			return nil
		},
	}
	if server {
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	} else {
		cfg.RootCAs = pool
		cfg.ServerName = m.Peer
	}
	return cfg, nil
}
