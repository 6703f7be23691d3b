package bridgecmd

import (
	"fmt"
	"github.com/intercom-dev/intercom/internal/kongrun"
	"path/filepath"
	"time"

	"github.com/intercom-dev/intercom/internal/certs"
	"github.com/intercom-dev/intercom/internal/schema"
)

// CertsInitCmd creates a CA.
type CertsInitCmd struct {
	Dir string `required:"" help:"Directory for ca.crt and ca.key." placeholder:"DIR"`
}

// Help shows examples.
func (CertsInitCmd) Help() string {
	return `Creates a private CA: ca.crt (give it to every host) and ca.key (0600; keep it
offline once the hosts have their certificates). Refuses to overwrite a CA.

Examples:
  intercom-bridge certs init --dir ~/.intercom-ca
  intercom-bridge --json certs init --dir ./ca`
}

// Run creates the CA.
func (c *CertsInitCmd) Run(e *env) error {
	if err := certs.Init(c.Dir); err != nil {
		return err
	}
	return e.print(schema.CAWritten{CACert: filepath.Join(c.Dir, certs.CACert), CAKey: filepath.Join(c.Dir, certs.CAKey)},
		fmt.Sprintf("CA written to %s/ca.crt and %s/ca.key (keep ca.key private)", c.Dir, c.Dir))
}

// CertsIssueCmd issues a host certificate.
type CertsIssueCmd struct {
	Dir       string        `required:"" help:"Directory holding the CA." placeholder:"DIR"`
	Name      string        `required:"" help:"Host name to certify (lowercase letters, digits, '.' and '-')." placeholder:"HOST"`
	Days      int           `default:"825" help:"Validity in days."`
	NotBefore time.Duration `name:"not-before" offset:"true" hidden:"" help:"Start of validity relative to now (tests)."`
	ValidFor  time.Duration `name:"valid-for" hidden:"" help:"Validity, overrides --days (tests)."`
}

// Help shows examples.
func (CertsIssueCmd) Help() string {
	return `Issues HOST.crt and HOST.key (0600), signed by the CA in --dir. The certificate
names HOST (common name and DNS name) and serves as both client and server
certificate. A team's NATS servers get one too (say --name nats).

Examples:
  intercom-bridge certs issue --dir ~/.intercom-ca --name alpha
  intercom-bridge certs issue --dir ~/.intercom-ca --name ci-runner-1 --days 90`
}

// Run issues the certificate.
func (c *CertsIssueCmd) Run(e *env) error {
	valid := time.Duration(c.Days) * 24 * time.Hour
	if c.ValidFor != 0 {
		valid = c.ValidFor
	}
	if err := certs.ValidName(c.Name); err != nil {
		return kongrun.Usage(err)
	}
	if err := certs.Issue(c.Dir, c.Name, time.Now().Add(c.NotBefore-time.Minute), valid); err != nil {
		return err
	}
	crt, key := filepath.Join(c.Dir, c.Name+".crt"), filepath.Join(c.Dir, c.Name+".key")
	return e.print(schema.CertIssued{Host: c.Name, Cert: crt, Key: key}, fmt.Sprintf("issued %s and %s", crt, key))
}

// CertsRevokeCmd revokes a host's certificate.
type CertsRevokeCmd struct {
	Dir      string        `required:"" help:"Directory holding the CA." placeholder:"DIR"`
	Name     string        `required:"" help:"Host whose certificate to revoke." placeholder:"HOST"`
	Days     int           `default:"365" help:"Days until the list's NextUpdate (refresh it with certs crl before then)."`
	ValidFor time.Duration `name:"valid-for" offset:"true" hidden:"" help:"NextUpdate from now, overrides --days (tests; negative: already past)."`
}

// Help shows examples.
func (CertsRevokeCmd) Help() string {
	return `Adds HOST's certificate to ca.crl in --dir. Copy ca.crl beside ca.crt on every
host (or point --crl at it): running bridges re-read it within seconds (or at
once on SIGHUP) and close the revoked host's links.

Examples:
  intercom-bridge certs revoke --dir ~/.intercom-ca --name beta
  scp ~/.intercom-ca/ca.crl alpha:.intercom/ca.crl`
}

// Run revokes.
func (c *CertsRevokeCmd) Run(e *env) error {
	if err := certs.Revoke(c.Dir, c.Name, crlValidity(c.Days, c.ValidFor)); err != nil {
		return err
	}
	return e.print(schema.CertRevoked{Revoked: c.Name, CRL: filepath.Join(c.Dir, certs.CRL)},
		fmt.Sprintf("revoked %s; %s updated (running bridges re-read it)", c.Name, filepath.Join(c.Dir, certs.CRL)))
}

// CertsCRLCmd re-signs the revocation list.
type CertsCRLCmd struct {
	Dir      string        `required:"" help:"Directory holding the CA." placeholder:"DIR"`
	Days     int           `default:"365" help:"Days until the list's NextUpdate."`
	ValidFor time.Duration `name:"valid-for" offset:"true" hidden:"" help:"NextUpdate from now, overrides --days (tests; negative: already past)."`
}

// Help shows examples.
func (CertsCRLCmd) Help() string {
	return `Re-signs ca.crl with a new NextUpdate, keeping its entries (or writes an empty
list). A list past its NextUpdate makes every bridge refuse every peer, so
refresh it before then and copy it to the hosts.

Examples:
  intercom-bridge certs crl --dir ~/.intercom-ca
  intercom-bridge certs crl --dir ~/.intercom-ca --days 30`
}

// Run re-signs the list.
func (c *CertsCRLCmd) Run(e *env) error {
	if err := certs.RefreshCRL(c.Dir, crlValidity(c.Days, c.ValidFor)); err != nil {
		return err
	}
	path := filepath.Join(c.Dir, certs.CRL)
	return e.print(schema.CRLSigned{CRL: path}, fmt.Sprintf("%s signed", path))
}

func crlValidity(days int, override time.Duration) time.Duration {
	if override != 0 {
		return override
	}
	return time.Duration(days) * 24 * time.Hour
}
