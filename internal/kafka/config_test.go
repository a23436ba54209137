package kafka

import (
	"strings"
	"testing"
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
	for _, tc := range []struct {
		name    string
		src     Source
		wantErr string
		check   func(*settings) bool
	}{
		{"defaults", base, "", func(s *settings) bool { return !s.resetLatest && !s.readCommitted && s.maxPollRecords == 500000 }},
		{"latest with kafka. prefix", with("kafka.auto.offset.reset", "latest"), "", func(s *settings) bool { return s.resetLatest }},
		{"earliest", with("auto.offset.reset", "EARLIEST"), "", func(s *settings) bool { return !s.resetLatest }},
		{"read committed", with("isolation.level", "read_committed"), "", func(s *settings) bool { return s.readCommitted }},
		{"max poll records", with("max.poll.records", "1000"), "", func(s *settings) bool { return s.maxPollRecords == 1000 }},
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
