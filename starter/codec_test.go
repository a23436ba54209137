package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lakepipe/lakepipe/internal/payloadcodec"
)

func testCodec(t *testing.T) (*payloadcodec.Codec, string) {
	t.Helper()
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	spec := "main:" + base64.StdEncoding.EncodeToString(k)
	c, err := payloadcodec.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c, spec
}

// body is a /decode or /encode request body, as the UI sends it.
func body(t *testing.T, ps ...*commonpb.Payload) []byte {
	t.Helper()
	b, err := protojson.Marshal(&commonpb.Payloads{Payloads: ps})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCodecServer(t *testing.T) {
	const token = "codec-token-0123456789abcdef"
	const origin = "http://localhost:8233"
	codec, _ := testCodec(t)
	clear, err := converter.GetDefaultDataConverter().ToPayload(map[string]string{"table": "sealed_orders"})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := codec.Encode([]*commonpb.Payload{clear})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	srv := httptest.NewServer(codecHandler(codec, token, []string{origin, "https://temporal.example.com"}, slog.New(slog.NewJSONHandler(&logs, nil))))
	defer srv.Close()

	type req struct {
		name, method, path string
		headers            map[string]string
		body               []byte
	}
	auth := map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json", "X-Namespace": "default", "Origin": origin}
	cases := []struct {
		req
		status  int
		check   func(t *testing.T, resp *http.Response, body []byte)
		corsFor string // the Access-Control-Allow-Origin wanted ("" for none)
	}{
		{req{"decode", "POST", "/decode", auth, body(t, sealed[0])}, 200, func(t *testing.T, _ *http.Response, b []byte) {
			got := decodeBody(t, b)
			if len(got) != 1 || string(got[0].Data) != string(clear.Data) || string(got[0].Metadata["encoding"]) != "json/plain" {
				t.Errorf("decoded %v, want the clear JSON %s", got, clear.Data)
			}
		}, origin},
		{req{"decode under a prefix", "POST", "/lakepipe/decode", auth, body(t, sealed[0])}, 200, nil, origin},
		{req{"encode", "POST", "/encode", auth, body(t, clear)}, 200, func(t *testing.T, _ *http.Response, b []byte) {
			got := decodeBody(t, b)
			if len(got) != 1 || string(got[0].Metadata["encoding"]) != payloadcodec.Encoding || bytes.Contains(got[0].Data, []byte("sealed_orders")) {
				t.Fatalf("encoded %v", got)
			}
			back, err := codec.Decode(got)
			if err != nil || string(back[0].Data) != string(clear.Data) {
				t.Errorf("encoded payload does not decode: %v", err)
			}
		}, origin},
		{req{"clear payload passes", "POST", "/decode", auth, body(t, clear)}, 200, nil, origin},
		{req{"no token", "POST", "/decode", map[string]string{"Origin": origin}, body(t, sealed[0])}, 401, nil, origin},
		{req{"wrong token", "POST", "/decode", map[string]string{"Authorization": "Bearer nope"}, body(t, sealed[0])}, 401, nil, ""},
		{req{"token prefix", "POST", "/decode", map[string]string{"Authorization": "Bearer " + token[:10]}, body(t, sealed[0])}, 401, nil, ""},
		{req{"token without scheme", "POST", "/encode", map[string]string{"Authorization": token}, body(t, clear)}, 401, nil, ""},
		{req{"basic scheme", "POST", "/encode", map[string]string{"Authorization": "Basic " + token}, body(t, clear)}, 401, nil, ""},
		{req{"lower-case scheme", "POST", "/decode", map[string]string{"Authorization": "bearer " + token}, body(t, sealed[0])}, 200, nil, ""},
		{req{"GET decode", "GET", "/decode", auth, nil}, 404, nil, origin},
		{req{"other path", "POST", "/other", auth, body(t, clear)}, 404, nil, origin},
		{req{"bad body", "POST", "/decode", auth, []byte("{not json")}, 400, nil, origin},
		{req{"tampered payload", "POST", "/decode", auth, body(t, tamper(sealed[0]))}, 400, func(t *testing.T, _ *http.Response, b []byte) {
			if !strings.Contains(string(b), "authentication failed") {
				t.Errorf("body %q does not say why", b)
			}
		}, origin},
		{req{"preflight", "OPTIONS", "/decode", map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type,x-namespace"}, nil}, 204, func(t *testing.T, r *http.Response, _ []byte) {
			for _, h := range []string{"Authorization", "X-Namespace", "Content-Type"} {
				if !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), h) {
					t.Errorf("Access-Control-Allow-Headers %q lacks %s", r.Header.Get("Access-Control-Allow-Headers"), h)
				}
			}
			if !strings.Contains(r.Header.Get("Access-Control-Allow-Methods"), "POST") || r.Header.Get("Access-Control-Allow-Credentials") != "true" {
				t.Errorf("preflight headers %v", r.Header)
			}
		}, origin},
		{req{"preflight second origin", "OPTIONS", "/encode", map[string]string{"Origin": "https://temporal.example.com"}, nil}, 204, nil, "https://temporal.example.com"},
		{req{"preflight other origin", "OPTIONS", "/decode", map[string]string{"Origin": "http://evil.example"}, nil}, 403, nil, ""},
		{req{"healthz", "GET", "/healthz", nil, nil}, 200, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := http.NewRequest(c.method, srv.URL+c.path, bytes.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range c.headers {
				r.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, b, c.status)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != c.corsFor {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, c.corsFor)
			}
			if c.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if strings.Contains(string(b), token) {
				t.Errorf("the answer holds the token: %s", b)
			}
			if c.check != nil {
				c.check(t, resp, b)
			}
		})
	}
	// The log names requests, never payloads (clear or sealed) nor tokens.
	l := logs.String()
	if !strings.Contains(l, `"path":"/decode"`) || !strings.Contains(l, `"status":401`) || !strings.Contains(l, `"namespace":"default"`) {
		t.Errorf("log does not describe the requests:\n%s", l)
	}
	for _, bad := range []string{token, "sealed_orders", base64.StdEncoding.EncodeToString(clear.Data), base64.StdEncoding.EncodeToString(sealed[0].Data), "Bearer"} {
		if strings.Contains(l, bad) {
			t.Errorf("log holds %q:\n%s", bad, l)
		}
	}
}

func tamper(p *commonpb.Payload) *commonpb.Payload {
	q := &commonpb.Payload{Metadata: p.Metadata, Data: append([]byte(nil), p.Data...)}
	q.Data[len(q.Data)-1] ^= 1
	return q
}

func decodeBody(t *testing.T, b []byte) []*commonpb.Payload {
	t.Helper()
	// The SDK's handler answers with encoding/json of the proto struct;
	// protojson reads that too (base64 bytes, same field names).
	var ps commonpb.Payloads
	if err := protojson.Unmarshal(b, &ps); err != nil {
		var raw json.RawMessage = b
		t.Fatalf("answer %s: %v", raw, err)
	}
	return ps.Payloads
}

// TestCodecServerConfig checks that the codec server refuses to start
// without keys or token, and says so without echoing a secret.
func TestCodecServerConfig(t *testing.T) {
	_, spec := testCodec(t)
	cases := []struct {
		name, key, token string
		args             []string
		want             string
	}{
		{"no key", "", "tok-0123456789abcdef", nil, "LAKEPIPE_CODEC_KEY is not set"},
		{"bad key", "main:c2hvcnQ=", "tok-0123456789abcdef", nil, `key "main" (entry 1) is 5 bytes`},
		{"no token", spec, "", nil, "LAKEPIPE_CODEC_TOKEN is not set"},
		{"cert without key", spec, "tok-0123456789abcdef", []string{"-tls-cert", "/tmp/cert.pem"}, "go together"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("LAKEPIPE_CODEC_KEY_FILE", "") // the local stack's env.sh sets it
			t.Setenv("LAKEPIPE_CODEC_KEY", c.key)
			t.Setenv("LAKEPIPE_CODEC_TOKEN", c.token)
			var stderr bytes.Buffer
			// A server that starts after all would serve until cancelled:
			// the test then fails instead of hanging.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			code := run(ctx, append([]string{"codec-server", "-listen", "127.0.0.1:0"}, c.args...), nil, io.Discard, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), c.want)
			}
			if c.token != "" && strings.Contains(stderr.String(), c.token) || strings.Contains(stderr.String(), spec) {
				t.Errorf("stderr holds a secret: %q", stderr.String())
			}
		})
	}
}

// TestTemporalConfig checks the Temporal settings of connFlags.
func TestTemporalConfig(t *testing.T) {
	_, spec := testCodec(t)
	cases := []struct {
		name string
		env  map[string]string
		want string // error substring; "" for none
	}{
		{"plain", nil, ""},
		{"codec", map[string]string{"LAKEPIPE_CODEC_KEY": spec}, ""},
		{"bad codec key", map[string]string{"LAKEPIPE_CODEC_KEY": "main:AAAA"}, `LAKEPIPE_CODEC_KEY: key "main" (entry 1) is 3 bytes`},
		{"cert without key", map[string]string{"LAKEPIPE_TEMPORAL_TLS_CERT": "/some/client.pem"}, "needs its private key: set LAKEPIPE_TEMPORAL_TLS_KEY"},
		{"key without cert", map[string]string{"LAKEPIPE_TEMPORAL_TLS_KEY": "/some/client.key"}, "needs its client certificate"},
		{"missing CA", map[string]string{"LAKEPIPE_TEMPORAL_TLS_CA": "/nonexistent/ca.pem"}, "CA file"},
		{"api key", map[string]string{"LAKEPIPE_TEMPORAL_API_KEY": "tmprl-secret-api-key"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"LAKEPIPE_CODEC_KEY", "LAKEPIPE_CODEC_KEY_FILE", "LAKEPIPE_TEMPORAL_TLS_CERT", "LAKEPIPE_TEMPORAL_TLS_KEY", "LAKEPIPE_TEMPORAL_TLS_CA", "LAKEPIPE_TEMPORAL_API_KEY"} {
				t.Setenv(k, c.env[k])
			}
			var f connFlags
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			f.register(fs)
			if err := fs.Parse(nil); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.temporalConfig()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if (c.env["LAKEPIPE_CODEC_KEY"] != "") != (cfg.Codec != nil) {
					t.Errorf("codec %v with LAKEPIPE_CODEC_KEY %q", cfg.Codec, c.env["LAKEPIPE_CODEC_KEY"])
				}
				if cfg.APIKey != c.env["LAKEPIPE_TEMPORAL_API_KEY"] {
					t.Error("API key not taken from LAKEPIPE_TEMPORAL_API_KEY")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), spec) || strings.Contains(err.Error(), "AAAA") {
				t.Errorf("error %q holds a key", err)
			}
		})
	}
	// No secret has a flag.
	var f connFlags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f.register(fs)
	fs.VisitAll(func(fl *flag.Flag) {
		if strings.Contains(fl.Name, "api-key") || strings.Contains(fl.Name, "codec") || strings.Contains(fl.Name, "token") {
			t.Errorf("flag -%s would put a secret in process lists", fl.Name)
		}
	})
}
