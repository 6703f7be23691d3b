package schema

// The --json outputs of intercom-bridge. (status and purge print the
// broker's wire replies, wire.BridgeStatusReply and wire.BridgePurgeReply.)

// BridgeEvent is one line of serve --json and join --json: ready once
// linked; connecting and refused (join only); down when the link drops.
type BridgeEvent struct {
	Event string `json:"event" jsonschema:"ready, connecting, refused or down"`
	Addr  string `json:"addr"`
	Name  string `json:"name"`
	Peer  string `json:"peer" jsonschema:"the peers this side accepts (names, or any host of the CA)"`
	Error string `json:"error,omitempty"`
}

// CAWritten is certs init --json.
type CAWritten struct {
	CACert string `json:"ca_cert"`
	CAKey  string `json:"ca_key"`
}

// CertIssued is certs issue --json.
type CertIssued struct {
	Host string `json:"host"`
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// CertRevoked is certs revoke --json.
type CertRevoked struct {
	Revoked string `json:"revoked"`
	CRL     string `json:"crl"`
}

// CRLSigned is certs crl --json.
type CRLSigned struct {
	CRL string `json:"crl"`
}

// NATSConfig is nats-config --json: the configuration text, or with -o the
// file written; and the hosts it names.
type NATSConfig struct {
	Config  string   `json:"config,omitempty"`
	Written string   `json:"written,omitempty"`
	Hosts   []string `json:"hosts"`
}
