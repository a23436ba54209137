package kafka

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSettings(t *testing.T) {
	base := Source{Bootstrap: []string{"h:9092"}, Topic: "t", Group: "g"}
	with := func(kv ...string) Source {
		s := base
		s.Config = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			s.Config[kv[i]] = kv[i+1]
		}
		return s
	}
	budgeted := func(s Source, limit int64) Source {
		s.MaxFetchMemory = limit
		return s
	}
	for _, tc := range []struct {
		name    string
		src     Source
		wantErr string
		check   func(*settings) bool
	}{
		{"defaults", base, "", func(s *settings) bool { return !s.resetLatest && s.readCommitted && s.maxPollRecords == 500000 }},
		{"read uncommitted", with("isolation.level", "read_uncommitted"), "", func(s *settings) bool { return !s.readCommitted }},
		{"latest with kafka. prefix", with("kafka.auto.offset.reset", "latest"), "", func(s *settings) bool { return s.resetLatest }},
		{"earliest", with("auto.offset.reset", "EARLIEST"), "", func(s *settings) bool { return !s.resetLatest }},
		{"read committed", with("isolation.level", "read_committed"), "", func(s *settings) bool { return s.readCommitted }},
		{"max poll records", with("max.poll.records", "1000"), "", func(s *settings) bool { return s.maxPollRecords == 1000 }},
		{"default fetch", base, "", func(s *settings) bool { return s.fetchMax == 1<<20 }},
		{"fetch raised", with("fetch.max.bytes", "52428800"), "", func(s *settings) bool { return s.fetchMax == 50<<20 }},
		// Uncompressed batches of 7-byte records take 25 bytes decoded a
		// byte: a fetch of them stays within the fetch budget.
		{"fetch within the budget", budgeted(with("fetch.max.bytes", "52428800"), 256<<20), "", func(s *settings) bool { return s.fetchMax == 256<<20/25 }},
		{"default fetch under the budget", budgeted(base, 256<<20), "", func(s *settings) bool { return s.fetchMax == 1<<20 }},
		{"tiny budget", budgeted(base, 10), "", func(s *settings) bool { return s.fetchMax == 1 }},
		{"sasl plain", with("security.protocol", "SASL_PLAINTEXT", "sasl.username", "u", "sasl.password", "p"), "", nil},
		{"sasl scram", with("security.protocol", "sasl_plaintext", "sasl.mechanism", "SCRAM-SHA-512", "sasl.username", "u", "sasl.password", "p"), "", nil},
		{"tls no verify", with("security.protocol", "SSL", "ssl.endpoint.identification.algorithm", "none"), "", nil},
		{"unknown key", with("sasl.mechanizm", "PLAIN"), `unknown setting "sasl.mechanizm"`, nil},
		{"bad reset", with("auto.offset.reset", "middle"), "expected earliest or latest", nil},
		{"bad number", with("fetch.max.bytes", "lots"), "fetch.max.bytes", nil},
		{"zero poll", with("max.poll.records", "0"), "≥ 1", nil},
		{"bad protocol", with("security.protocol", "TLS"), "expected PLAINTEXT, SSL", nil},
		{"sasl without user", with("security.protocol", "SASL_SSL"), "needs sasl.username", nil},
		{"bad mechanism", with("security.protocol", "SASL_PLAINTEXT", "sasl.username", "u", "sasl.mechanism", "GSSAPI"), "expected PLAIN, SCRAM", nil},
		{"missing ca file", with("security.protocol", "SSL", "ssl.ca.location", "/nonexistent/ca.pem"), "ssl.ca.location", nil},
		{"half a client cert", with("security.protocol", "SSL", "ssl.certificate.location", "c.pem"), "set ssl.key.location", nil},
		{"no brokers", Source{Topic: "t"}, "bootstrap servers", nil},
		{"no topic", Source{Bootstrap: []string{"h"}}, "topic", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := tc.src.settings()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil && !tc.check(st) {
				t.Fatalf("settings %+v", st)
			}
		})
	}
}

func TestSecretKey(t *testing.T) {
	for k, want := range map[string]bool{"sasl.password": true, "kafka.sasl.password": true, "ssl.key.password": true,
		"sasl.jaas.config": true, "sasl.username": false, "security.protocol": false} {
		if got := SecretKey(k); got != want {
			t.Errorf("SecretKey(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestOffsetsSorted(t *testing.T) {
	o := Offsets{3: 1, 0: 5, 1: 2}
	if got := o.Sorted(); len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 3 {
		t.Fatalf("Sorted() = %v", got)
	}
}

// TestTLSWithoutHostName: ssl.endpoint.identification.algorithm = none
// accepts a broker whose certificate names another host, and still
// refuses one signed by a CA that is not trusted.
func TestTLSWithoutHostName(t *testing.T) {
	broker := httptest.NewTLSServer(http.NotFoundHandler())
	defer broker.Close()
	pemOf := func(der []byte) string {
		f := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	// Another CA, which signed nothing the broker has.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	otherCA, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(ca, check string) error {
		tc, err := tlsConfig(map[string]string{"ssl.ca.location": ca, "ssl.endpoint.identification.algorithm": check})
		if err != nil {
			t.Fatal(err)
		}
		tc.ServerName = "broker.elsewhere.example" // not a name in the certificate
		c, err := tls.Dial("tcp", broker.Listener.Addr().String(), tc)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(pemOf(broker.Certificate().Raw), "none"); err != nil {
		t.Errorf("none, trusted CA, other host name: %v", err)
	}
	if err := dial(pemOf(broker.Certificate().Raw), "https"); err == nil {
		t.Error("https accepted a certificate for another host name")
	}
	if err := dial(pemOf(otherCA), "none"); err == nil {
		t.Error("none accepted a certificate no trusted CA signed")
	}
}

// TestBatchTooLargeError: the message names where the batch is, the limit
// in force (the client's 1 GiB when none is set) and its setting.
func TestBatchTooLargeError(t *testing.T) {
	for _, c := range []struct {
		limit int64
		want  string
	}{
		{1 << 20, "more than 1 MiB"},
		{64 << 20, "more than 64 MiB"},
		{1000, "more than 1000 bytes"},
		{0, "more than 1024 MiB"},
	} {
		if msg := (&BatchTooLargeError{Topic: "t", Offset: 17, Next: 40, Limit: c.limit}).Error(); !strings.Contains(msg, "offset 17: a record batch (up to offset 39) decompresses") {
			t.Errorf("a batch of many records: %q", msg)
		}
		msg := (&BatchTooLargeError{Topic: "t", Partition: 2, Offset: 17, Next: 18, Limit: c.limit}).Error()
		for _, w := range []string{"topic t partition 2 offset 17", c.want, "LAKEPIPE_MAX_KAFKA_BATCH_BYTES"} {
			if !strings.Contains(msg, w) {
				t.Errorf("limit %d: %q lacks %q", c.limit, msg, w)
			}
		}
	}
	// The fetch's budget names its own setting.
	msg := (&BatchTooLargeError{Topic: "t", Partition: 2, Offset: 17, Next: 40, Limit: 256 << 20, Fetch: true}).Error()
	for _, w := range []string{"topic t partition 2 offset 17", "(up to offset 39)", "more than 256 MiB decompressed and decoded", "LAKEPIPE_MAX_KAFKA_FETCH_MEMORY"} {
		if !strings.Contains(msg, w) || strings.Contains(msg, "LAKEPIPE_MAX_KAFKA_BATCH_BYTES") {
			t.Errorf("the fetch's budget: %q lacks %q or names the batch's setting", msg, w)
		}
	}
}
