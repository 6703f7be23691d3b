package certs

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"path/filepath"
	"sync"
	"time"

	"github.com/intercom-dev/intercom/internal/atomicfile"
	"github.com/intercom-dev/intercom/internal/bounded"
)

// DefaultCRLValidity is how long a revocation list written by Revoke or
// RefreshCRL stays current (its NextUpdate). A list past its NextUpdate
// refuses every peer until it is refreshed.
const DefaultCRLValidity = 365 * 24 * time.Hour

// ErrStaleCRL is returned for every peer while the revocation list is past
// its NextUpdate.
var ErrStaleCRL = errors.New("the revocation list is past its NextUpdate")

// ErrOlderCRL is returned by Reload for a list whose CRL number is not
// above the one in force: an older list copied back (validly signed, it
// may not revoke a host revoked since). The list in force stays.
var ErrOlderCRL = errors.New("revocation list older than the one in force")

// Revoke adds every certificate the CA in dir issued to name (its record,
// and dir/name.crt) to dir/ca.crl, valid for validFor (0: the default).
func Revoke(dir, name string, validFor time.Duration) error {
	ca, caKey, err := loadCA(dir)
	if err != nil {
		return err
	}
	serials, err := serialsOf(dir, name)
	if err != nil {
		return err
	}
	entries, number, err := currentEntries(dir, ca)
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, e := range entries {
		listed[e.SerialNumber.String()] = true
	}
	for _, sn := range serials {
		if !listed[sn.String()] {
			entries = append(entries, x509.RevocationListEntry{SerialNumber: sn, RevocationTime: time.Now()})
		}
	}
	return writeCRL(dir, ca, caKey, entries, number, validFor)
}

// RefreshCRL re-signs dir/ca.crl (creating an empty one if there is none)
// with a new NextUpdate, validFor from now (0: the default).
func RefreshCRL(dir string, validFor time.Duration) error {
	ca, caKey, err := loadCA(dir)
	if err != nil {
		return err
	}
	entries, number, err := currentEntries(dir, ca)
	if err != nil {
		return err
	}
	return writeCRL(dir, ca, caKey, entries, number, validFor)
}

// currentEntries reads the entries of dir's CRL and the next CRL number:
// above that list's and above the last one the CA recorded.
func currentEntries(dir string, ca *x509.Certificate) ([]x509.RevocationListEntry, *big.Int, error) {
	last := lastCRLNumber(dir)
	old, err := LoadCRL(filepath.Join(dir, CRL), ca)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, last.Add(last, big.NewInt(1)), nil
	}
	if err != nil {
		return nil, nil, err
	}
	if old.Number != nil && old.Number.Cmp(last) > 0 {
		last = old.Number
	}
	return old.RevokedCertificateEntries, new(big.Int).Add(last, big.NewInt(1)), nil
}

func writeCRL(dir string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, entries []x509.RevocationListEntry, number *big.Int, validFor time.Duration) error {
	if validFor == 0 {
		validFor = DefaultCRLValidity
	}
	now := time.Now()
	next, this := now.Add(validFor), now.Add(-time.Minute)
	if next.Before(this) { // a list that is stale from the start (tests)
		this = next.Add(-time.Minute)
	}
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: number, ThisUpdate: this, NextUpdate: next,
		RevokedCertificateEntries: entries,
	}, ca, caKey)
	if err != nil {
		return fmt.Errorf("write revocation list: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, CRLNumber), []byte(number.String()+"\n"), 0o600); err != nil {
		return fmt.Errorf("record the CRL number: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(dir, CRL), pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), 0o644)
}

// LoadCRL reads and verifies a revocation list signed by ca.
func LoadCRL(path string, ca *x509.Certificate) (*x509.RevocationList, error) {
	data, err := bounded.ReadFile(path, path, maxPEM)
	if err != nil {
		return nil, err
	}
	return parseCRL(path, data, ca)
}

func parseCRL(path string, data []byte, ca *x509.Certificate) (*x509.RevocationList, error) {
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

// Revocation is the live revocation list of one bridge: Reload re-reads the
// file when it changed, and Check refuses revoked certificates, and every
// certificate while the list is past its NextUpdate. A list that vanishes
// or turns unreadable keeps the last good one in force.
type Revocation struct {
	path string
	ca   *x509.Certificate

	mu      sync.RWMutex
	loaded  bool
	revoked map[string]bool
	next    time.Time
	number  *big.Int // of the list in force: a list is taken only with a higher one
	stamp   [32]byte // hash of the file last loaded
}

// RevocationStatus describes the list in force.
type RevocationStatus struct {
	Path       string    `json:"path"`
	Loaded     bool      `json:"loaded"`
	Revoked    int       `json:"revoked"`
	Number     string    `json:"number,omitempty"`
	NextUpdate time.Time `json:"next_update,omitzero"`
	Stale      bool      `json:"stale,omitempty"`
}

// NewRevocation loads the list at path. A missing file is an error when
// required (an explicit --crl), else it leaves revocation off until the file
// appears (see Loaded).
func NewRevocation(path string, required bool, ca *x509.Certificate) (*Revocation, error) {
	r := &Revocation{path: path, ca: ca, revoked: map[string]bool{}}
	if _, err := r.Reload(); err != nil {
		if required || !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return r, nil
}

// Reload re-reads the list if the file changed since the last load. It
// reports whether a new list is in force. On error the previous list stays:
// an unreadable file, one not signed by the CA, and one whose CRL number
// is not above the list in force (ErrOlderCRL: numbers never go backwards).
func (r *Revocation) Reload() (bool, error) {
	data, err := bounded.ReadFile(r.path, r.path, maxPEM)
	if err != nil {
		return false, err
	}
	stamp := sha256.Sum256(data)
	r.mu.RLock()
	same := r.loaded && stamp == r.stamp
	r.mu.RUnlock()
	if same {
		return false, nil
	}
	crl, err := parseCRL(r.path, data, r.ca)
	if err != nil {
		return false, err
	}
	number := crl.Number
	if number == nil {
		number = new(big.Int)
	}
	revoked := make(map[string]bool, len(crl.RevokedCertificateEntries))
	for _, e := range crl.RevokedCertificateEntries {
		revoked[e.SerialNumber.String()] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.loaded && number.Cmp(r.number) <= 0 {
		return false, fmt.Errorf("%s: %w: its CRL number %s is not above %s; refused, the list numbered %s stays in force (write a new one with `intercom-bridge certs crl`)",
			r.path, ErrOlderCRL, number, r.number, r.number)
	}
	r.loaded, r.revoked, r.next, r.stamp, r.number = true, revoked, crl.NextUpdate, stamp, number
	return true, nil
}

// Check refuses a revoked certificate, and any certificate while the list
// is past its NextUpdate.
func (r *Revocation) Check(cert *x509.Certificate) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.loaded {
		return nil
	}
	if !r.next.IsZero() && time.Now().After(r.next) {
		return fmt.Errorf("refused: %w (%s expired %s; refresh it with `intercom-bridge certs crl`)", ErrStaleCRL, r.path, r.next.UTC().Format(time.RFC3339))
	}
	if r.revoked[cert.SerialNumber.String()] {
		return fmt.Errorf("refused: certificate of %q is revoked", cert.Subject.CommonName)
	}
	return nil
}

// Status describes the list in force.
func (r *Revocation) Status() RevocationStatus {
	r.mu.RLock()
	defer r.mu.RUnlock()
	number := ""
	if r.number != nil {
		number = r.number.String()
	}
	return RevocationStatus{Path: r.path, Loaded: r.loaded, Revoked: len(r.revoked), Number: number,
		NextUpdate: r.next, Stale: r.loaded && !r.next.IsZero() && time.Now().After(r.next)}
}
