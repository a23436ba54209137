// Package tlsfiles builds the TLS client configuration of a connection from
// PEM files, the same way for every server lakepipe talks to (ClickHouse,
// Temporal, Kafka).
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// Files are the PEM files of a TLS client: the CAs to trust (empty: the
// system's), and a client certificate with its key for mutual TLS (both or
// neither).
type Files struct {
	CA, Cert, Key string
	ServerName    string // checked against the server's certificate (default: the host dialled)
}

// Names are the settings behind Files' fields, named in errors so that a
// user knows what to fix.
type Names struct {
	CA, Cert, Key string
}

// Config loads the files. Errors name files and settings, never what the
// files hold.
func (f Files) Config(n Names) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName}
	switch {
	case f.Cert != "" && f.Key == "":
		return nil, fmt.Errorf("a client certificate (%s) needs its private key: set %s too", f.Cert, n.Key)
	case f.Key != "" && f.Cert == "":
		return nil, fmt.Errorf("a private key (%s) needs its client certificate: set %s too", f.Key, n.Cert)
	case f.Cert != "":
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s with key %s: %w", f.Cert, f.Key, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("CA file (%s): %w", n.CA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s (%s) holds no PEM certificate", f.CA, n.CA)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}
