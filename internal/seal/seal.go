// Package seal encrypts the secrets lakepipe keeps in its catalog (storage
// connections' access keys, Kafka pipes' SASL passwords) before they reach
// ClickHouse, with AES-256-GCM in envelope style: every secret gets a fresh
// random data key, which the master key seals.
//
// A sealed secret is stored as the self-describing text
//
//	lpseal1:<key id>:<base64(nonce|sealed data key)>:<base64(nonce|ciphertext)>
//
// where the key id (KeyID) names the master key that sealed it, so that
// keys can rotate: a Sealer seals with its current key and opens with any
// of its keys. The caller's additional data (the catalog passes the
// object's kind, schema and name) is authenticated with both layers, so a
// sealed value cannot be moved to another object. Stored text without the
// lpseal1: prefix is a secret written before sealing existed and is
// returned as it is by Open.
//
// No error and no String of this package holds key material or a secret.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

const (
	// EnvKey is the environment variable of the current master key:
	// the standard base64 of KeySize random bytes.
	EnvKey = "LAKEPIPE_SECRET_KEY"
	// EnvKeyFile names a file holding the current master key (base64, as
	// EnvKey); set one of EnvKey and EnvKeyFile.
	EnvKeyFile = "LAKEPIPE_SECRET_KEY_FILE"
	// EnvOldKeys is a comma-separated list of earlier master keys
	// (base64), used only to open secrets sealed before a rotation.
	EnvOldKeys = "LAKEPIPE_SECRET_OLD_KEYS"
	// EnvPlaintext=true lets secrets be stored unencrypted when no key is
	// set; without it storing a secret without a key is refused.
	EnvPlaintext = "LAKEPIPE_SECRET_PLAINTEXT"

	// Prefix starts every sealed value.
	Prefix = "lpseal1:"
	// KeySize is the size of a master key in bytes (AES-256).
	KeySize = 32

	nonceSize = 12
	idBytes   = 8 // of SHA-256, hex in key ids
)

// ErrNoKey is the error of sealing a secret with no key configured (and
// plaintext not chosen).
var ErrNoKey = errors.New("no key to seal secrets with: set " + EnvKey + " (base64 of 32 random bytes, e.g. `openssl rand -base64 32`) or " +
	EnvKeyFile + ", or " + EnvPlaintext + "=true to store secrets unencrypted")

// ErrMalformed is the error of opening a value that has the lpseal1:
// prefix but not its shape.
var ErrMalformed = errors.New("sealed secret is malformed")

// Key is a master key. Its String is its id, never its material.
type Key struct {
	id   string
	aead cipher.AEAD
}

// NewKey returns the master key of KeySize bytes of material.
func NewKey(material []byte) (*Key, error) {
	if len(material) != KeySize {
		return nil, fmt.Errorf("secret key: %d bytes, want %d", len(material), KeySize)
	}
	block, err := aes.NewCipher(material)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return &Key{id: KeyID(material), aead: aead}, nil
}

// ParseKey parses the standard base64 of a master key (surrounding space
// ignored, padding optional). Its errors never quote the text.
func ParseKey(text string) (*Key, error) {
	text = strings.TrimSpace(text)
	b, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(text)
	}
	if err != nil {
		return nil, errors.New("secret key: not base64 (want the base64 of 32 random bytes, e.g. `openssl rand -base64 32`)")
	}
	return NewKey(b)
}

// KeyID is the id of a master key: the hex of the first 8 bytes of the
// SHA-256 of its material. It names the key without revealing it.
func KeyID(material []byte) string {
	sum := sha256.Sum256(material)
	return hex.EncodeToString(sum[:idBytes])
}

// ID returns the key's id.
func (k *Key) ID() string { return k.id }

// String returns the key's id.
func (k *Key) String() string { return "key " + k.id }

// Sealer seals secrets with its current key and opens them with any of its
// keys; it is safe for concurrent use. The nil *Sealer has no key: it
// refuses to seal and opens only plaintext values.
type Sealer struct {
	current   *Key
	keys      map[string]*Key
	plaintext bool
}

// New returns a Sealer that seals with current and opens with current and
// old. current may be nil: such a Sealer only opens (and refuses to seal).
func New(current *Key, old ...*Key) *Sealer {
	s := &Sealer{current: current, keys: map[string]*Key{}}
	for _, k := range append([]*Key{current}, old...) {
		if k != nil {
			s.keys[k.id] = k
		}
	}
	return s
}

// Plaintext returns a Sealer without a current key that stores secrets
// unencrypted (Seal returns them as they are), the operator's explicit
// choice; it still opens values sealed with old.
func Plaintext(old ...*Key) *Sealer {
	s := New(nil, old...)
	s.plaintext = true
	return s
}

// FromEnv returns the Sealer the environment configures: the current key
// from EnvKey or the file EnvKeyFile (setting both is an error), earlier
// keys from EnvOldKeys, and EnvPlaintext=true to store secrets unencrypted
// when there is no current key. With none of them set the Sealer opens
// plaintext values only and refuses to seal (ErrNoKey).
func FromEnv(getenv func(string) string) (*Sealer, error) {
	text, file := strings.TrimSpace(getenv(EnvKey)), strings.TrimSpace(getenv(EnvKeyFile))
	if text != "" && file != "" {
		return nil, fmt.Errorf("both %s and %s are set: set one", EnvKey, EnvKeyFile)
	}
	plaintext := false
	switch v := strings.TrimSpace(getenv(EnvPlaintext)); strings.ToLower(v) {
	case "", "false", "0":
	case "true", "1":
		plaintext = true
	default:
		return nil, fmt.Errorf("%s=%q: want true or false", EnvPlaintext, v)
	}
	var current *Key
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKeyFile, err)
		}
		if current, err = ParseKey(string(b)); err != nil {
			return nil, fmt.Errorf("%s %s: %w", EnvKeyFile, file, err)
		}
	} else if text != "" {
		var err error
		if current, err = ParseKey(text); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKey, err)
		}
	}
	if current != nil && plaintext {
		return nil, fmt.Errorf("%s=true and a key (%s or %s) are both set: choose one", EnvPlaintext, EnvKey, EnvKeyFile)
	}
	var old []*Key
	for i, part := range strings.Split(getenv(EnvOldKeys), ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, err := ParseKey(part)
		if err != nil {
			return nil, fmt.Errorf("%s, entry %d: %w", EnvOldKeys, i+1, err)
		}
		old = append(old, k)
	}
	if plaintext {
		return Plaintext(old...), nil
	}
	return New(current, old...), nil
}

// CurrentID returns the id of the key Seal uses, "" when there is none.
func (s *Sealer) CurrentID() string {
	if s == nil || s.current == nil {
		return ""
	}
	return s.current.id
}

// Seal returns the stored form of secret, bound to aad (Open must be
// given the same aad). The empty secret stays empty. Without a current
// key Seal fails with ErrNoKey, unless the Sealer is Plaintext, which
// returns secret as it is.
func (s *Sealer) Seal(secret string, aad []byte) (string, error) {
	if secret == "" {
		return "", nil
	}
	if s == nil || s.current == nil {
		if s != nil && s.plaintext {
			return secret, nil
		}
		return "", ErrNoKey
	}
	dataKey := make([]byte, KeySize)
	if _, err := rand.Read(dataKey); err != nil {
		return "", fmt.Errorf("seal secret: %w", err)
	}
	dk, err := NewKey(dataKey)
	if err != nil {
		return "", err
	}
	sealedKey, err := sealWith(s.current.aead, dataKey, outerAAD(s.current.id, aad))
	if err != nil {
		return "", err
	}
	sealedData, err := sealWith(dk.aead, []byte(secret), aad)
	if err != nil {
		return "", err
	}
	return Prefix + s.current.id + ":" + base64.RawStdEncoding.EncodeToString(sealedKey) + ":" +
		base64.RawStdEncoding.EncodeToString(sealedData), nil
}

// Open returns the secret of a stored value: a sealed value is opened with
// the key its id names, given the aad it was sealed with; a value without
// the lpseal1: prefix (stored before sealing) is returned as it is. It
// fails, never panics, on any other text: with ErrMalformed, with an error
// naming the key id when that key is not configured, or when the value
// does not authenticate (tampered, or sealed for other aad).
func (s *Sealer) Open(stored string, aad []byte) (string, error) {
	if !IsSealed(stored) {
		return stored, nil
	}
	id, sealedKey, sealedData, err := split(stored)
	if err != nil {
		return "", err
	}
	var k *Key
	if s != nil {
		k = s.keys[id]
	}
	if k == nil {
		return "", fmt.Errorf("secret sealed with key %s, which is not configured: set %s (or %s, for reading only) to that key", id, EnvKey, EnvOldKeys)
	}
	dataKey, err := openWith(k.aead, sealedKey, outerAAD(id, aad))
	if err != nil {
		return "", fmt.Errorf("secret sealed with key %s does not open: tampered with, or not this object's", id)
	}
	dk, err := NewKey(dataKey)
	if err != nil {
		return "", ErrMalformed
	}
	plain, err := openWith(dk.aead, sealedData, aad)
	if err != nil {
		return "", fmt.Errorf("secret sealed with key %s does not open: tampered with, or not this object's", id)
	}
	return string(plain), nil
}

// IsSealed reports whether a stored value is sealed (has the lpseal1:
// prefix) rather than plaintext.
func IsSealed(stored string) bool { return strings.HasPrefix(stored, Prefix) }

// StoredKeyID returns the id of the key a stored value names; ok is false
// for plaintext and malformed values.
func StoredKeyID(stored string) (id string, ok bool) {
	if !IsSealed(stored) {
		return "", false
	}
	id, _, _, err := split(stored)
	return id, err == nil
}

func split(stored string) (id string, sealedKey, sealedData []byte, err error) {
	parts := strings.Split(strings.TrimPrefix(stored, Prefix), ":")
	if len(parts) != 3 || len(parts[0]) != 2*idBytes {
		return "", nil, nil, ErrMalformed
	}
	if _, err := hex.DecodeString(parts[0]); err != nil {
		return "", nil, nil, ErrMalformed
	}
	sealedKey, err1 := base64.RawStdEncoding.DecodeString(parts[1])
	sealedData, err2 := base64.RawStdEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil {
		return "", nil, nil, ErrMalformed
	}
	return parts[0], sealedKey, sealedData, nil
}

// outerAAD binds the sealed data key to the format, the key id and the
// caller's aad.
func outerAAD(id string, aad []byte) []byte {
	return append([]byte(Prefix+id+"\x00"), aad...)
}

func sealWith(aead cipher.AEAD, plain, aad []byte) ([]byte, error) {
	nonce := make([]byte, nonceSize, nonceSize+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal secret: %w", err)
	}
	return aead.Seal(nonce, nonce, plain, aad), nil
}

func openWith(aead cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < nonceSize+aead.Overhead() {
		return nil, ErrMalformed
	}
	return aead.Open(nil, sealed[:nonceSize], sealed[nonceSize:], aad)
}
