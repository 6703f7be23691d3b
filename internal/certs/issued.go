package certs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/intercom-dev/intercom/internal/bounded"
)

// The CA's record, beside ca.key: every certificate it issued (Issued, one
// JSON line each), so that revoking a host revokes each certificate ever
// issued to that name, the ones a reissue replaced included; and the last
// CRL number it signed (CRLNumber), so that numbers never go back even if
// ca.crl is lost (a bridge refuses a list not numbered above the one in
// force).
const (
	Issued    = "issued.log"
	CRLNumber = "crl.number"
)

// maxRecord bounds the record read (a line is about 100 bytes).
const maxRecord = 16 << 20

// issuedCert is one line of the record.
type issuedCert struct {
	Name     string    `json:"name"`
	Serial   string    `json:"serial"`
	NotAfter time.Time `json:"not_after"`
}

// recordIssued appends a certificate to dir's record.
func recordIssued(dir, name string, serial *big.Int, notAfter time.Time) error {
	line, _ := json.Marshal(issuedCert{Name: name, Serial: serial.String(), NotAfter: notAfter.UTC()})
	f, err := os.OpenFile(filepath.Join(dir, Issued), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("record the certificate of %s: %w", name, err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("record the certificate of %s: %w", name, err)
	}
	return f.Close()
}

// serialsOf lists the serials the CA in dir issued to name: those of its
// record, and that of dir/name.crt (issued before the CA kept a record).
func serialsOf(dir, name string) ([]*big.Int, error) {
	var out []*big.Int
	seen := map[string]bool{}
	add := func(s *big.Int) {
		if !seen[s.String()] {
			seen[s.String()] = true
			out = append(out, s)
		}
	}
	data, err := bounded.ReadFile(filepath.Join(dir, Issued), Issued, maxRecord)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var c issuedCert
		if json.Unmarshal(sc.Bytes(), &c) != nil || c.Name != name {
			continue
		}
		if s, ok := new(big.Int).SetString(c.Serial, 10); ok {
			add(s)
		}
	}
	if cert, err := LoadCert(filepath.Join(dir, name+".crt")); err == nil {
		add(cert.SerialNumber)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the CA in %s issued no certificate to %q (no %s.crt, nothing in %s)", dir, name, name, Issued)
	}
	return out, nil
}

// lastCRLNumber is the number of the last list the CA in dir signed (0:
// none recorded).
func lastCRLNumber(dir string) *big.Int {
	data, err := bounded.ReadFile(filepath.Join(dir, CRLNumber), CRLNumber, 64)
	n, ok := new(big.Int).SetString(strings.TrimSpace(string(data)), 10)
	if err != nil || !ok {
		return new(big.Int)
	}
	return n
}
