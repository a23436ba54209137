// Package payloadcodec encrypts Temporal payloads with AES-256-GCM, so that
// what lakepipe's workflows carry (statements, table names, volume
// locations, file lists, statuses) is not readable in Temporal's history
// or by anyone with access to the Temporal server.
//
// A Codec holds one or more named 32-byte keys: the first encrypts, all of
// them decrypt, which is how keys are rotated. An encrypted payload has the
// metadata encoding "binary/encrypted" and the id of the key it was
// encrypted with; its data is a fresh 12-byte nonce followed by the
// AES-GCM sealing of the original payload (metadata and data), with the key
// id as additional data. Payloads without that encoding are returned as
// they are by Decode, so histories written before encryption was turned on
// still replay.
//
// No error and no String of a Codec holds key material.
package payloadcodec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/lakepipe/lakepipe/internal/errtext"
)

const (
	// EnvKey is the environment variable of the key list:
	// "keyid:base64key[,keyid:base64key…]", the first entry encrypting.
	EnvKey = "LAKEPIPE_CODEC_KEY"
	// EnvKeyFile names a file holding the same key list (the local stack's
	// .stack/codec.key); setting it and EnvKey is an error.
	EnvKeyFile = "LAKEPIPE_CODEC_KEY_FILE"
	// EnvRequire=true makes workers refuse payloads that are not
	// encrypted: Decode fails on them, and signals without an encrypted
	// payload are dropped (internal/signalguard).
	EnvRequire = "LAKEPIPE_CODEC_REQUIRE"
	// Encoding is the metadata encoding of an encrypted payload.
	Encoding = "binary/encrypted"
	// MetadataKeyID is the metadata key naming the key a payload was
	// encrypted with.
	MetadataKeyID = "encryption-key-id"
	// KeySize is the size of a key in bytes (AES-256).
	KeySize = 32

	nonceSize = 12
)

// Codec is a converter.PayloadCodec; it is safe for concurrent use.
type Codec struct {
	encryptID string
	// require: Decode refuses payloads that are not encrypted.
	require bool
	aeads   map[string]cipher.AEAD
	ids     []string // in configuration order
}

var _ converter.PayloadCodec = (*Codec)(nil)

// Key is one named key of a Codec.
type Key struct {
	ID       string
	Material []byte // KeySize bytes
}

// newCodec returns a codec that encrypts with keys[0] and decrypts with any
// of keys. Ids must be unique, non-empty, and made of letters, digits, '.',
// '_' and '-'.
func newCodec(keys []Key) (*Codec, error) {
	if len(keys) == 0 {
		return nil, errors.New("no key given")
	}
	c := &Codec{encryptID: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for _, k := range keys {
		if err := checkID(k.ID); err != nil {
			return nil, err
		}
		if _, dup := c.aeads[k.ID]; dup {
			return nil, fmt.Errorf("key id %q is given twice", k.ID)
		}
		if len(k.Material) != KeySize {
			return nil, fmt.Errorf("key %q is %d bytes, want %d (AES-256; make one with `head -c32 /dev/urandom | base64`)", k.ID, len(k.Material), KeySize)
		}
		block, err := aes.NewCipher(k.Material)
		if err != nil {
			return nil, fmt.Errorf("key %q: not an AES key", k.ID)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %q: cannot make AES-GCM", k.ID)
		}
		c.aeads[k.ID] = aead
		c.ids = append(c.ids, k.ID)
	}
	return c, nil
}

func checkID(id string) error {
	if id == "" {
		return errors.New("a key has an empty id")
	}
	if len(id) > 64 {
		return fmt.Errorf("key id %.16q… is longer than 64 characters", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("key id %q holds %q: use letters, digits, '.', '_' and '-'", id, r)
		}
	}
	return nil
}

// Parse reads a key list "keyid:base64key[,keyid:base64key…]" (the format
// of LAKEPIPE_CODEC_KEY): the first key encrypts, all decrypt. Keys are
// standard base64 (padded or not; URL-safe also accepted) of 32 bytes.
// Errors name the entry by position and id, never its key.
func Parse(spec string) (*Codec, error) {
	var keys []Key
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, b64, ok := strings.Cut(entry, ":")
		id, b64 = strings.TrimSpace(id), strings.TrimSpace(b64)
		if !ok || id == "" || b64 == "" {
			return nil, fmt.Errorf("%s: entry %d is not keyid:base64key", EnvKey, i+1)
		}
		if err := checkID(id); err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", EnvKey, i+1, err)
		}
		material, ok := decodeBase64(b64)
		if !ok {
			return nil, fmt.Errorf("%s: key %q (entry %d) is not base64", EnvKey, id, i+1)
		}
		if len(material) != KeySize {
			return nil, fmt.Errorf("%s: key %q (entry %d) is %d bytes, want %d (make one with `head -c32 /dev/urandom | base64`)", EnvKey, id, i+1, len(material), KeySize)
		}
		keys = append(keys, Key{ID: id, Material: material})
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s holds no key (want keyid:base64key[,keyid:base64key…])", EnvKey)
	}
	c, err := newCodec(keys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvKey, err)
	}
	return c, nil
}

func decodeBase64(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

// FromEnv reads the key list from LAKEPIPE_CODEC_KEY or the file
// LAKEPIPE_CODEC_KEY_FILE; it returns nil and no error when neither is
// set (payloads are then stored in clear). LAKEPIPE_CODEC_REQUIRE is read
// by RequireFromEnv, not here: clients and the codec server decode what
// they are given.
func FromEnv() (*Codec, error) {
	return fromEnv(os.Getenv)
}

func fromEnv(getenv func(string) string) (*Codec, error) {
	spec, file := strings.TrimSpace(getenv(EnvKey)), strings.TrimSpace(getenv(EnvKeyFile))
	if spec != "" && file != "" {
		return nil, fmt.Errorf("both %s and %s are set: set one", EnvKey, EnvKeyFile)
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKeyFile, err)
		}
		c, err := Parse(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", EnvKeyFile, file, err)
		}
		return c, nil
	}
	if spec == "" {
		return nil, nil
	}
	return Parse(spec)
}

// RequireFromEnv reads LAKEPIPE_CODEC_REQUIRE (true/1 or false/0, unset
// is false).
func RequireFromEnv() (bool, error) {
	switch v := strings.TrimSpace(os.Getenv(EnvRequire)); strings.ToLower(v) {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want true or false", EnvRequire, v)
	}
}

// Requiring returns a copy of c whose Decode refuses payloads that are
// not encrypted (a worker with LAKEPIPE_CODEC_REQUIRE=true). Histories
// written before encryption was turned on no longer replay with it, so
// it is for workers whose workflows all started encrypted.
func (c *Codec) Requiring() *Codec {
	r := *c
	r.require = true
	return &r
}

// RequiresEncryption reports whether Decode refuses clear payloads.
func (c *Codec) RequiresEncryption() bool { return c.require }

// IsEncrypted reports whether p was encrypted by a Codec (it may still
// fail to decrypt).
func IsEncrypted(p *commonpb.Payload) bool {
	return p != nil && string(p.GetMetadata()[converter.MetadataEncoding]) == Encoding
}

// EncryptKeyID is the id of the key new payloads are encrypted with.
func (c *Codec) EncryptKeyID() string { return c.encryptID }

// KeyIDs are the ids of all keys, the encrypting one first.
func (c *Codec) KeyIDs() []string { return append([]string(nil), c.ids...) }

// String describes the codec by its key ids only.
func (c *Codec) String() string {
	return fmt.Sprintf("AES-256-GCM payload codec (encrypts with %q; decrypts %s)", c.encryptID, strings.Join(c.ids, ", "))
}

// GoString is String, so that %#v shows no key either.
func (c *Codec) GoString() string { return c.String() }

// Encode encrypts every payload with the first key. A nil payload stays
// nil.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := c.aeads[c.encryptID]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if p == nil {
			continue
		}
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		buf := make([]byte, nonceSize, nonceSize+len(plain)+aead.Overhead())
		if _, err := rand.Read(buf); err != nil {
			return nil, fmt.Errorf("encrypt payload: no randomness for a nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(Encoding),
				MetadataKeyID:              []byte(c.encryptID),
			},
			Data: aead.Seal(buf, buf, plain, []byte(c.encryptID)),
		}
	}
	return out, nil
}

// Decode decrypts the payloads encoded by Encode, with the key named in
// each; other payloads are returned unchanged, or refused when the codec
// is Requiring. A payload encrypted with a key the codec does not hold,
// or altered after encryption, is an error naming the key id.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if p == nil || !IsEncrypted(p) {
			if p != nil && c.require {
				return nil, fmt.Errorf("payload is not encrypted (encoding %s) and this worker requires encrypted payloads (%s=true): it was not written by a lakepipe client holding the keys", errtext.Quote(string(p.GetMetadata()[converter.MetadataEncoding])), EnvRequire)
			}
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		aead, ok := c.aeads[id]
		if !ok {
			if id == "" {
				return nil, errors.New("decrypt payload: it names no key id (metadata " + MetadataKeyID + " missing)")
			}
			return nil, fmt.Errorf("decrypt payload: it was encrypted with key %q, which %s does not hold (keep retired keys after the first one to decrypt old payloads)", id, EnvKey)
		}
		data := p.GetData()
		if len(data) < nonceSize+aead.Overhead() {
			return nil, fmt.Errorf("decrypt payload (key %q): %d bytes is too short to be an encrypted payload (tampered or truncated)", id, len(data))
		}
		plain, err := aead.Open(nil, data[:nonceSize], data[nonceSize:], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("decrypt payload (key %q): authentication failed: the key under this id is not the one that encrypted it, or the payload was altered", id)
		}
		var inner commonpb.Payload
		if err := proto.Unmarshal(plain, &inner); err != nil {
			return nil, fmt.Errorf("decrypt payload (key %q): decrypted data is not a payload: %w", id, err)
		}
		out[i] = &inner
	}
	return out, nil
}
