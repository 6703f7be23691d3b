package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Peers says which hosts may be on the other side of a link: the listed
// names, or any host with a certificate from the CA.
type Peers struct {
	Names []string
	Any   bool
}

// Allows reports whether host may link.
func (p Peers) Allows(host string) bool { return p.Any || slices.Contains(p.Names, host) }

// Validate checks the names.
func (p Peers) Validate() error {
	if !p.Any && len(p.Names) == 0 {
		return errors.New("name the peers with --peer HOST (repeatable) or allow any host of the CA with --any-peer")
	}
	for _, n := range p.Names {
		if err := ValidName(n); err != nil {
			return fmt.Errorf("--peer: %w", err)
		}
	}
	return nil
}

func (p Peers) String() string {
	if p.Any {
		return "any host of the CA"
	}
	return strings.Join(p.Names, ", ")
}

// Material names the files a bridge side uses.
type Material struct {
	Cert, Key, CA string
	CRL           string // "" looks for ca.crl beside the CA
}

// Link is the loaded TLS material of one bridge side, with its live
// revocation list.
type Link struct {
	pair       tls.Certificate
	pool       *x509.CertPool
	Revocation *Revocation
	// CRLRequired: the list was named explicitly (--crl); without it, a
	// missing ca.crl leaves revocation off (and Load's caller warns).
	CRLRequired bool
}

// Load reads the certificate, key, CA and revocation list.
func (m Material) Load() (*Link, error) {
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
	rev, err := NewRevocation(crlPath, m.CRL != "", ca)
	if err != nil {
		return nil, err
	}
	return &Link{pair: pair, pool: pool, Revocation: rev, CRLRequired: m.CRL != ""}, nil
}

// HostName is the host a verified certificate names: its common name, which
// must also be one of its DNS names and a valid host name.
func HostName(leaf *x509.Certificate) (string, error) {
	n := leaf.Subject.CommonName
	if ValidName(n) != nil || !slices.Contains(leaf.DNSNames, n) {
		return "", fmt.Errorf("refused: certificate names %q, which is not a host name of the CA's", n)
	}
	return n, nil
}

// verify is the check both sides run on the other's (already chain-verified)
// certificate: present, a host name, not revoked, and acceptable to allow.
func (l *Link) verify(allow func(host string) error) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("refused: the peer presented no certificate")
		}
		leaf := cs.PeerCertificates[0]
		if err := l.Revocation.Check(leaf); err != nil {
			return err
		}
		host, err := HostName(leaf)
		if err != nil {
			return err
		}
		return allow(host)
	}
}

// ExpectOneOf is an allow function for a fixed set of names.
func ExpectOneOf(p Peers) func(string) error {
	return func(host string) error {
		if p.Allows(host) {
			return nil
		}
		return fmt.Errorf("refused: peer certificate names %q, expected %s", host, quoteAll(p.Names))
	}
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return "one of " + strings.Join(q, ", ")
}

// ServerConfig is the TLS 1.3 configuration of a listening side: a client
// certificate from the CA is required, and allow decides on its host.
func (l *Link) ServerConfig(allow func(host string) error) *tls.Config {
	return &tls.Config{
		MinVersion:       tls.VersionTLS13,
		Certificates:     []tls.Certificate{l.pair},
		ClientCAs:        l.pool,
		ClientAuth:       tls.RequireAndVerifyClientCert,
		VerifyConnection: l.verify(allow),
	}
}

// ClientConfig is the TLS 1.3 configuration of a joining side: the server's
// certificate must come from the CA and name serverName. accepted, if set,
// is told each server certificate accepted (to check it again later).
func (l *Link) ClientConfig(serverName string, accepted func(*x509.Certificate)) *tls.Config {
	check := l.verify(ExpectOneOf(Peers{Names: []string{serverName}}))
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{l.pair},
		RootCAs:      l.pool,
		ServerName:   serverName,
		VerifyConnection: func(cs tls.ConnectionState) error {
			err := check(cs)
			if err == nil && accepted != nil {
				accepted(cs.PeerCertificates[0])
			}
			return err
		},
	}
}

// Leaf is this side's own certificate.
func (l *Link) Leaf() *x509.Certificate { return l.pair.Leaf }
