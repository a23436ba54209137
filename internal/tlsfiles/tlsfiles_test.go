package tlsfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigErrorsNameTheSetting(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	names := Names{CA: "X_CA", Cert: "X_CERT", Key: "X_KEY"}
	for _, c := range []struct {
		name  string
		files Files
		want  string
	}{
		{"cert without key", Files{Cert: "c.pem"}, "set X_KEY"},
		{"key without cert", Files{Key: "k.pem"}, "set X_CERT"},
		{"missing CA", Files{CA: filepath.Join(dir, "nope.pem")}, "CA file (X_CA)"},
		{"CA not PEM", Files{CA: notPEM}, "holds no PEM certificate"},
		{"unreadable pair", Files{Cert: notPEM, Key: notPEM}, "client certificate " + notPEM},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.files.Config(names)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to say %q", err, c.want)
			}
		})
	}
	tc, err := Files{ServerName: "ch.example"}.Config(names)
	if err != nil || tc.ServerName != "ch.example" || tc.RootCAs != nil {
		t.Fatalf("plain TLS: %+v, %v", tc, err)
	}
}
