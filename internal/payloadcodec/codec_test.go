package payloadcodec

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

func mustParse(t *testing.T, spec string) *Codec {
	t.Helper()
	c, err := Parse(spec)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

// clear is a payload as the default data converter makes it.
func clear(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRoundTrip(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	secret := `COPY INTO sealed_orders FROM VOLUME landing USING CSV`
	cases := []struct {
		name     string
		encSpec  string // the codec that encodes
		decSpec  string // the codec that decodes
		payloads []*commonpb.Payload
	}{
		{"one key", "k1:" + b64(k1), "k1:" + b64(k1), []*commonpb.Payload{clear(t, secret)}},
		{"several payloads and nil", "k1:" + b64(k1), "k1:" + b64(k1), []*commonpb.Payload{clear(t, secret), nil, clear(t, 42), clear(t, nil), clear(t, []byte{0, 1, 2})}},
		{"empty list", "k1:" + b64(k1), "k1:" + b64(k1), nil},
		{"rotation: old key decrypts", "k1:" + b64(k1), "k2:" + b64(k2) + ", k1:" + b64(k1), []*commonpb.Payload{clear(t, secret)}},
		{"rotation: new key decrypts", "k2:" + b64(k2) + ",k1:" + b64(k1), "k2:" + b64(k2), []*commonpb.Payload{clear(t, secret)}},
		{"unpadded and url-safe keys", "k1:" + base64.RawURLEncoding.EncodeToString(k1), "k1:" + b64(k1), []*commonpb.Payload{clear(t, secret)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			enc, dec := mustParse(t, c.encSpec), mustParse(t, c.decSpec)
			encoded, err := enc.Encode(c.payloads)
			if err != nil {
				t.Fatal(err)
			}
			if len(encoded) != len(c.payloads) {
				t.Fatalf("%d payloads encoded into %d", len(c.payloads), len(encoded))
			}
			for i, p := range encoded {
				if c.payloads[i] == nil {
					if p != nil {
						t.Errorf("payload %d: nil encoded into %v", i, p)
					}
					continue
				}
				if got := string(p.Metadata[converter.MetadataEncoding]); got != Encoding {
					t.Errorf("payload %d: encoding %q, want %q", i, got, Encoding)
				}
				if got := string(p.Metadata[MetadataKeyID]); got != enc.EncryptKeyID() {
					t.Errorf("payload %d: key id %q, want %q", i, got, enc.EncryptKeyID())
				}
				if bytes.Contains(p.Data, c.payloads[i].Data) && len(c.payloads[i].Data) > 4 {
					t.Errorf("payload %d: the clear data is in the encrypted one", i)
				}
				if len(p.Metadata) != 2 {
					t.Errorf("payload %d: metadata %v, want encoding and key id only", i, p.Metadata)
				}
			}
			decoded, err := dec.Decode(encoded)
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.payloads {
				if !proto.Equal(decoded[i], c.payloads[i]) {
					t.Errorf("payload %d: decoded %v, want %v", i, decoded[i], c.payloads[i])
				}
			}
		})
	}
}

// TestNonceFresh checks that the same payload encrypts differently each
// time (a fresh nonce per payload).
func TestNonceFresh(t *testing.T) {
	c := mustParse(t, "k:"+b64(newKey(t)))
	p := clear(t, "same")
	a, _ := c.Encode([]*commonpb.Payload{p, p})
	if bytes.Equal(a[0].Data, a[1].Data) || bytes.Equal(a[0].Data[:nonceSize], a[1].Data[:nonceSize]) {
		t.Fatal("two encryptions of one payload are equal")
	}
}

// TestDataConverter checks the codec behind the SDK's codec data
// converter, the way lakepipe's clients use it.
func TestDataConverter(t *testing.T) {
	c := mustParse(t, "k:"+b64(newKey(t)))
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
	type in struct{ Table, Location string }
	want := in{"sealed_orders", "oss://bucket/landing/"}
	p, err := dc.ToPayload(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Metadata[converter.MetadataEncoding]) != Encoding || bytes.Contains(p.Data, []byte("sealed_orders")) {
		t.Fatalf("payload not encrypted: %v", p)
	}
	var got in
	if err := dc.FromPayload(p, &got); err != nil || got != want {
		t.Fatalf("FromPayload: %v %+v", err, got)
	}
	// A payload written before encryption was turned on still decodes.
	old := clear(t, want)
	got = in{}
	if err := dc.FromPayload(old, &got); err != nil || got != want {
		t.Fatalf("clear payload: %v %+v", err, got)
	}
}

func TestDecodeErrors(t *testing.T) {
	k1, k2, other := newKey(t), newKey(t), newKey(t)
	c1 := mustParse(t, "k1:"+b64(k1))
	encrypted := func() *commonpb.Payload {
		out, err := c1.Encode([]*commonpb.Payload{clear(t, "sealed_orders")})
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	cases := []struct {
		name    string
		decoder string
		alter   func(p *commonpb.Payload)
		want    string
	}{
		{"unknown key id", "k2:" + b64(k2), nil, `key "k1", which LAKEPIPE_CODEC_KEY does not hold`},
		{"wrong key under the same id", "k1:" + b64(other), nil, `(key "k1"): authentication failed`},
		{"flipped data bit", "k1:" + b64(k1), func(p *commonpb.Payload) { p.Data[len(p.Data)-20] ^= 1 }, "authentication failed"},
		{"flipped nonce bit", "k1:" + b64(k1), func(p *commonpb.Payload) { p.Data[0] ^= 0x80 }, "authentication failed"},
		{"truncated", "k1:" + b64(k1), func(p *commonpb.Payload) { p.Data = p.Data[:10] }, "too short"},
		{"key id swapped", "k1:" + b64(k1) + ",k2:" + b64(k2), func(p *commonpb.Payload) { p.Metadata[MetadataKeyID] = []byte("k2") }, `(key "k2"): authentication failed`},
		{"key id removed", "k1:" + b64(k1), func(p *commonpb.Payload) { delete(p.Metadata, MetadataKeyID) }, "names no key id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := encrypted()
			if c.alter != nil {
				c.alter(p)
			}
			dec := mustParse(t, c.decoder)
			_, err := dec.Decode([]*commonpb.Payload{clear(t, "fine"), p})
			if err == nil {
				t.Fatal("decoded; want an error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			for _, k := range [][]byte{k1, k2, other} {
				if strings.Contains(err.Error(), b64(k)) || bytes.Contains([]byte(err.Error()), k) {
					t.Errorf("error %q holds key material", err)
				}
			}
		})
	}
}

func TestPassThrough(t *testing.T) {
	c := mustParse(t, "k:"+b64(newKey(t)))
	cases := []*commonpb.Payload{
		clear(t, map[string]string{"table": "sealed_orders"}),
		clear(t, nil),
		clear(t, []byte("raw")),
		{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/zlib")}, Data: []byte("x")},
		{Data: []byte("no metadata")},
		{},
	}
	got, err := c.Decode(cases)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		if got[i] != cases[i] {
			t.Errorf("payload %d: not passed through as it was: %v", i, got[i])
		}
	}
}

func TestParseErrors(t *testing.T) {
	k := b64(newKey(t))
	short := b64(make([]byte, 16))
	cases := []struct {
		spec, want string
	}{
		{"", "holds no key"},
		{" , ", "holds no key"},
		{k, "entry 1 is not keyid:base64key"},
		{"a:" + k + ",:" + k, "entry 2 is not keyid:base64key"},
		{"a:", "entry 1 is not keyid:base64key"},
		{"a:not*base64!", `key "a" (entry 1) is not base64`},
		{"a:" + short, `key "a" (entry 1) is 16 bytes, want 32`},
		{"a:" + k + ",a:" + k, `key id "a" is given twice`},
		{"a b:" + k, `key id "a b" holds ' '`},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			_, err := Parse(c.spec)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded", c.spec)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if !strings.Contains(err.Error(), EnvKey) {
				t.Errorf("error %q does not name %s", err, EnvKey)
			}
			if strings.Contains(err.Error(), k) || strings.Contains(err.Error(), short) || strings.Contains(err.Error(), "not*base64") {
				t.Errorf("error %q holds key material", err)
			}
		})
	}
}

func TestStringHidesKeys(t *testing.T) {
	k := newKey(t)
	c := mustParse(t, "main:"+b64(k)+",old:"+b64(newKey(t)))
	for _, s := range []string{c.String(), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(c)} {
		if !strings.Contains(s, `"main"`) || strings.Contains(s, b64(k)) || strings.Contains(s, string(k)) {
			t.Errorf("codec prints as %q", s)
		}
	}
	if got := strings.Join(c.KeyIDs(), ","); got != "main,old" {
		t.Errorf("KeyIDs %s", got)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvKeyFile, "") // the local stack's env.sh sets it
	t.Setenv(EnvKey, "")
	if c, err := FromEnv(); c != nil || err != nil {
		t.Fatalf("unset: %v %v", c, err)
	}
	t.Setenv(EnvKey, "k:"+b64(newKey(t)))
	if c, err := FromEnv(); c == nil || err != nil {
		t.Fatalf("set: %v %v", c, err)
	}
	t.Setenv(EnvKey, "k:short")
	if _, err := FromEnv(); err == nil {
		t.Fatal("bad key accepted")
	}
}

// A Requiring codec decrypts what it encrypted and refuses clear payloads,
// whose error names the setting and not the payload's data.
func TestRequiringRefusesClear(t *testing.T) {
	c := mustParse(t, "k1:"+b64(newKey(t))).Requiring()
	if !c.RequiresEncryption() {
		t.Fatal("Requiring codec does not say it requires encryption")
	}
	enc, err := c.Encode([]*commonpb.Payload{clear(t, "pause me")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(enc); err != nil {
		t.Fatalf("decode of an encrypted payload: %v", err)
	}
	_, err = c.Decode([]*commonpb.Payload{clear(t, "injected-9d1c")})
	if err == nil || !strings.Contains(err.Error(), EnvRequire) || strings.Contains(err.Error(), "injected-9d1c") {
		t.Fatalf("clear payload: err = %v, want a refusal naming %s without the data", err, EnvRequire)
	}
	// The plain codec it was made from still passes clear payloads.
	plain := mustParse(t, "k1:"+b64(newKey(t)))
	if _, err := plain.Decode([]*commonpb.Payload{clear(t, "old history")}); err != nil {
		t.Fatalf("non-requiring codec refused a clear payload: %v", err)
	}
}

func TestFromEnvKeyFile(t *testing.T) {
	key := "local:" + b64(newKey(t))
	dir := t.TempDir()
	file := dir + "/codec.key"
	if err := os.WriteFile(file, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := fromEnv(env(map[string]string{EnvKeyFile: file}))
	if err != nil || c == nil || c.EncryptKeyID() != "local" {
		t.Fatalf("key file: codec %v, err %v", c, err)
	}
	if c, err := fromEnv(env(nil)); c != nil || err != nil {
		t.Fatalf("nothing set: codec %v, err %v; want none", c, err)
	}
	if _, err := fromEnv(env(map[string]string{EnvKeyFile: file, EnvKey: key})); err == nil {
		t.Fatal("both the key and the key file set: no error")
	}
	_, err = fromEnv(env(map[string]string{EnvKeyFile: dir + "/missing"}))
	if err == nil || !strings.Contains(err.Error(), EnvKeyFile) {
		t.Fatalf("missing file: err = %v", err)
	}
	if err := os.WriteFile(file, []byte("local:bm90LWEta2V5"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := fromEnv(env(map[string]string{EnvKeyFile: file})); err == nil || strings.Contains(err.Error(), "bm90LWEta2V5") {
		t.Fatalf("bad key in file: err = %v, want an error without the key", err)
	}
}
