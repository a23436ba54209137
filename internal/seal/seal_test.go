package seal

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newKey(t testing.TB) (*Key, string) {
	t.Helper()
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	text := base64.StdEncoding.EncodeToString(b)
	k, err := ParseKey(text)
	if err != nil {
		t.Fatal(err)
	}
	return k, text
}

var aad = []byte("connection\x00\x00conn1")

func TestRoundTrip(t *testing.T) {
	k, _ := newKey(t)
	s := New(k)
	for _, secret := range []string{"x", "p@ss:w0rd,with:colons", strings.Repeat("long ", 1000), "ünïcode"} {
		stored, err := s.Seal(secret, aad)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stored, Prefix+k.ID()+":") || len(secret) > 4 && strings.Contains(stored, secret) {
			t.Fatalf("stored %q", stored)
		}
		if id, ok := StoredKeyID(stored); !ok || id != k.ID() {
			t.Fatalf("StoredKeyID = %q, %v", id, ok)
		}
		again, _ := s.Seal(secret, aad)
		if again == stored {
			t.Fatal("two seals of one secret are equal: nonces or data keys repeat")
		}
		got, err := s.Open(stored, aad)
		if err != nil || got != secret {
			t.Fatalf("Open = %q, %v", got, err)
		}
	}
	if stored, err := s.Seal("", aad); err != nil || stored != "" {
		t.Fatalf("Seal(\"\") = %q, %v", stored, err)
	}
}

func TestWrongKey(t *testing.T) {
	k1, _ := newKey(t)
	k2, _ := newKey(t)
	stored, err := New(k1).Seal("secret", aad)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(k2).Open(stored, aad)
	if err == nil || !strings.Contains(err.Error(), k1.ID()) || strings.Contains(err.Error(), "secret\"") {
		t.Fatalf("Open with another key: %v", err)
	}
	if _, err := (*Sealer)(nil).Open(stored, aad); err == nil || !strings.Contains(err.Error(), k1.ID()) {
		t.Fatalf("Open without keys: %v", err)
	}
	// Rotation: k2 current, k1 old, opens both.
	s := New(k2, k1)
	if got, err := s.Open(stored, aad); err != nil || got != "secret" {
		t.Fatalf("Open with the old key configured = %q, %v", got, err)
	}
	resealed, _ := s.Seal("secret", aad)
	if _, err := New(k1).Open(resealed, aad); err == nil {
		t.Fatal("the old key opens a value sealed with the new one")
	}
}

func TestTampered(t *testing.T) {
	k, _ := newKey(t)
	s := New(k)
	stored, err := s.Seal("secret", aad)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(stored, ":")
	for i := 2; i < len(parts); i++ {
		b, _ := base64.RawStdEncoding.DecodeString(parts[i])
		for _, pos := range []int{0, nonceSize, len(b) - 1} {
			c := append([]byte(nil), b...)
			c[pos] ^= 1
			p := append([]string(nil), parts...)
			p[i] = base64.RawStdEncoding.EncodeToString(c)
			if got, err := s.Open(strings.Join(p, ":"), aad); err == nil {
				t.Fatalf("tampered part %d byte %d opened: %q", i, pos, got)
			}
		}
	}
	// Swapping in another value's sealed data key fails too.
	other, _ := s.Seal("secret", aad)
	op := strings.Split(other, ":")
	if _, err := s.Open(strings.Join([]string{parts[0], parts[1], op[2], parts[3]}, ":"), aad); err == nil {
		t.Fatal("a value with another value's data key opened")
	}
	if _, err := s.Open(stored[:len(stored)-4], aad); err == nil {
		t.Fatal("a truncated value opened")
	}
}

func TestWrongAAD(t *testing.T) {
	k, _ := newKey(t)
	s := New(k)
	stored, _ := s.Seal("secret", aad)
	if _, err := s.Open(stored, []byte("connection\x00\x00conn2")); err == nil || !strings.Contains(err.Error(), "not this object's") {
		t.Fatalf("Open for another object: %v", err)
	}
}

func TestPlaintextLegacy(t *testing.T) {
	k, _ := newKey(t)
	for _, s := range []*Sealer{nil, New(k), Plaintext()} {
		for _, v := range []string{"", "legacy-access-key", "lpseal", "LPSEAL1:x"} {
			if got, err := s.Open(v, aad); err != nil || got != v {
				t.Fatalf("Open(%q) = %q, %v", v, got, err)
			}
		}
	}
	if _, err := (*Sealer)(nil).Seal("x", aad); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Seal without a key: %v", err)
	}
	if _, err := New(nil, k).Seal("x", aad); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), EnvPlaintext+"=true") {
		t.Fatalf("Seal with old keys only: %v", err)
	}
	if got, err := Plaintext().Seal("x", aad); err != nil || got != "x" {
		t.Fatalf("Plaintext().Seal = %q, %v", got, err)
	}
}

func TestMalformed(t *testing.T) {
	k, _ := newKey(t)
	s := New(k)
	for _, v := range []string{"lpseal1:", "lpseal1:zz:a:b", "lpseal1:" + k.ID() + ":!!:AA", "lpseal1:" + k.ID() + ":AA:AA",
		"lpseal1:" + k.ID() + ":AA", "lpseal1:" + k.ID() + ":AA:AA:AA"} {
		if _, err := s.Open(v, aad); err == nil {
			t.Fatalf("Open(%q) succeeded", v)
		}
	}
}

func TestParseKey(t *testing.T) {
	k, text := newKey(t)
	again, err := ParseKey(" " + strings.TrimRight(text, "=") + "\n")
	if err != nil || again.ID() != k.ID() {
		t.Fatalf("ParseKey without padding = %v, %v", again, err)
	}
	if len(k.ID()) != 16 || k.String() != "key "+k.ID() {
		t.Fatalf("id %q, String %q", k.ID(), k.String())
	}
	for _, bad := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		if _, err := ParseKey(bad); err == nil {
			t.Fatalf("ParseKey(%q) succeeded", bad)
		} else if bad != "" && strings.Contains(err.Error(), bad) {
			t.Fatalf("error quotes the key: %v", err)
		}
	}
}

func TestFromEnv(t *testing.T) {
	k1, t1 := newKey(t)
	k2, t2 := newKey(t)
	file := filepath.Join(t.TempDir(), "secret.key")
	if err := os.WriteFile(file, []byte(t2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	envOf := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	s, err := FromEnv(envOf(EnvKeyFile, file, EnvOldKeys, " "+t1+" ,"))
	if err != nil || s.CurrentID() != k2.ID() || len(s.keys) != 2 {
		t.Fatalf("FromEnv = %+v, %v", s, err)
	}
	if s, err := FromEnv(envOf(EnvKey, t1)); err != nil || s.CurrentID() != k1.ID() {
		t.Fatalf("FromEnv(key) = %+v, %v", s, err)
	}
	if s, err := FromEnv(envOf()); err != nil || s.CurrentID() != "" || s.plaintext {
		t.Fatalf("FromEnv() = %+v, %v", s, err)
	}
	if s, err := FromEnv(envOf(EnvPlaintext, "true")); err != nil || !s.plaintext {
		t.Fatalf("FromEnv(plaintext) = %+v, %v", s, err)
	}
	for _, bad := range [][]string{
		{EnvKey, t1, EnvKeyFile, file},
		{EnvKey, t1, EnvPlaintext, "true"},
		{EnvKey, "short"},
		{EnvKeyFile, file + ".missing"},
		{EnvOldKeys, t1 + ",nope"},
		{EnvPlaintext, "yes please"},
	} {
		if _, err := FromEnv(envOf(bad...)); err == nil {
			t.Fatalf("FromEnv(%q) succeeded", bad)
		} else if strings.Contains(err.Error(), t1) {
			t.Fatalf("error holds a key: %v", err)
		}
	}
}

// FuzzOpen: Open never panics on stored text, and what it opens without
// error is either the text itself (plaintext) or a value sealed with the
// key for that aad.
func FuzzOpen(f *testing.F) {
	k, err := NewKey([]byte(strings.Repeat("k", KeySize)))
	if err != nil {
		f.Fatal(err)
	}
	s := New(k)
	sealed, _ := s.Seal("secret", aad)
	f.Add(sealed, string(aad))
	f.Add("plain", "")
	f.Add("lpseal1:", "x")
	f.Add("lpseal1:"+k.ID()+":AAAA:AAAA", "")
	f.Add("lpseal1:"+k.ID()+"::", "")
	f.Fuzz(func(t *testing.T, stored, a string) {
		got, err := s.Open(stored, []byte(a))
		if err == nil && !IsSealed(stored) && got != stored {
			t.Fatalf("plaintext %q opened as %q", stored, got)
		}
		_, _ = StoredKeyID(stored)
	})
}
