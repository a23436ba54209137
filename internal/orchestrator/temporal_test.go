package orchestrator

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/lakepipe/lakepipe/internal/payloadcodec"
)

// pki is a throw-away CA with a server certificate for "temporal.test"
// and a client certificate, written as PEM files in a temporary directory.
type pki struct {
	dir                   string
	ca                    *x509.CertPool
	serverCert            tls.Certificate
	caFile                string
	clientCert, clientKey string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, dns []string) ([]byte, []byte) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: dns, KeyUsage: x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	}
	p := &pki{dir: dir, ca: x509.NewCertPool()}
	p.ca.AddCert(caCert)
	p.caFile = write(t, dir, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	sc, sk := issue(2, "temporal.test", x509.ExtKeyUsageServerAuth, []string{"temporal.test"})
	if p.serverCert, err = tls.X509KeyPair(sc, sk); err != nil {
		t.Fatal(err)
	}
	cc, ck := issue(3, "lakepipe-worker", x509.ExtKeyUsageClientAuth, nil)
	p.clientCert, p.clientKey = write(t, dir, "client.pem", cc), write(t, dir, "client.key", ck)
	return p
}

func write(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeFrontend answers GetSystemInfo (what Dial calls) and records who
// asked.
type fakeFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu       sync.Mutex
	auth     []string
	clientCN string
	calls    int
}

func (f *fakeFrontend) GetSystemInfo(ctx context.Context, _ *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	md, _ := metadata.FromIncomingContext(ctx)
	f.auth = md.Get("authorization")
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
			f.clientCN = ti.State.PeerCertificates[0].Subject.CommonName
		}
	}
	return &workflowservice.GetSystemInfoResponse{}, nil
}

func serveTLS(t *testing.T, p *pki, clientAuth tls.ClientAuthType) (*fakeFrontend, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{p.serverCert}, ClientCAs: p.ca, ClientAuth: clientAuth})))
	f := &fakeFrontend{}
	workflowservice.RegisterWorkflowServiceServer(s, f)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return f, ln.Addr().String()
}

// TestDialTLS dials a TLS frontend with the settings lakepipe takes from
// LAKEPIPE_TEMPORAL_TLS_* and LAKEPIPE_TEMPORAL_API_KEY.
func TestDialTLS(t *testing.T) {
	p := newPKI(t)
	const apiKey = "tmprl-test-api-key-5d1e"
	cases := []struct {
		name       string
		clientAuth tls.ClientAuthType
		cfg        func(addr string) Config
		wantCN     string
		wantAuth   string
		wantErr    string
	}{
		{"mTLS", tls.RequireAndVerifyClientCert, func(addr string) Config {
			return Config{Address: addr, TLS: TLS{CAFile: p.caFile, CertFile: p.clientCert, KeyFile: p.clientKey, ServerName: "temporal.test"}}
		}, "lakepipe-worker", "", ""},
		{"API key", tls.NoClientCert, func(addr string) Config {
			return Config{Address: addr, TLS: TLS{CAFile: p.caFile, ServerName: "temporal.test"}, APIKey: apiKey}
		}, "", "Bearer " + apiKey, ""},
		{"no client certificate", tls.RequireAndVerifyClientCert, func(addr string) Config {
			return Config{Address: addr, TLS: TLS{CAFile: p.caFile, ServerName: "temporal.test"}, APIKey: apiKey}
		}, "", "", "does not answer"},
		{"server name mismatch", tls.NoClientCert, func(addr string) Config {
			return Config{Address: addr, TLS: TLS{CAFile: p.caFile, ServerName: "other.test"}, APIKey: apiKey}
		}, "", "", "does not answer"},
		{"server CA not trusted", tls.NoClientCert, func(addr string) Config {
			return Config{Address: addr, TLS: TLS{ServerName: "temporal.test"}, APIKey: apiKey}
		}, "", "", "does not answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, addr := serveTLS(t, p, c.clientAuth)
			cfg := c.cfg(addr)
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			o := New(cfg)
			defer o.Close()
			_, err := o.Client()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("dial: %v, want an error saying %q", err, c.wantErr)
				}
				if strings.Contains(err.Error(), apiKey) {
					t.Errorf("the error holds the API key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.calls == 0 || f.clientCN != c.wantCN || strings.Join(f.auth, ",") != c.wantAuth {
				t.Errorf("server saw %d calls, client certificate %q, authorization %q; want %q and %q", f.calls, f.clientCN, f.auth, c.wantCN, c.wantAuth)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	p := newPKI(t)
	notPEM := write(t, t.TempDir(), "junk.pem", []byte("not a certificate"))
	cases := []struct {
		name string
		tls  TLS
		want string
	}{
		{"plain", TLS{}, ""},
		{"system roots", TLS{Enabled: true}, ""},
		{"mTLS", TLS{CAFile: p.caFile, CertFile: p.clientCert, KeyFile: p.clientKey}, ""},
		{"cert without key", TLS{CertFile: p.clientCert}, "client certificate (" + p.clientCert + ") needs its private key: set LAKEPIPE_TEMPORAL_TLS_KEY"},
		{"key without cert", TLS{KeyFile: p.clientKey}, "needs its client certificate: set LAKEPIPE_TEMPORAL_TLS_CERT"},
		{"key of another file", TLS{CertFile: p.clientCert, KeyFile: p.caFile}, "client certificate " + p.clientCert + " with key " + p.caFile},
		{"missing CA", TLS{CAFile: filepath.Join(p.dir, "nope.pem")}, "CA file"},
		{"CA not PEM", TLS{CAFile: notPEM}, "holds no PEM certificate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Config{TLS: c.tls}.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			key, _ := os.ReadFile(p.clientKey)
			if strings.Contains(err.Error(), strings.TrimSpace(string(key))[40:80]) {
				t.Errorf("error %q holds the key", err)
			}
		})
	}
}

// TestClientOptions checks what a Config makes of the SDK's options: the
// codec behind the default data converter, failures encoded, TLS on with
// an API key.
func TestClientOptions(t *testing.T) {
	opts, err := Config{Address: "x:1"}.clientOptions()
	if err != nil || opts.DataConverter != nil || opts.FailureConverter != nil || opts.ConnectionOptions.TLS != nil || opts.Credentials != nil ||
		opts.ConnectionOptions.GrpcCompression != nil {
		t.Fatalf("plain config: %+v %v", opts, err)
	}
	opts, err = Config{Address: "x:1", Codec: converter.NewZlibCodec(converter.ZlibCodecOptions{AlwaysEncode: true}), APIKey: "k"}.clientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if opts.DataConverter == nil || opts.FailureConverter == nil {
		t.Fatal("a codec gives no data or failure converter")
	}
	if _, ok := opts.ConnectionOptions.GrpcCompression.(*client.GrpcCompressionNone); !ok {
		t.Errorf("with a codec, requests are still compressed: %T", opts.ConnectionOptions.GrpcCompression)
	}
	p, err := opts.DataConverter.ToPayload("sealed_orders")
	if err != nil || string(p.Metadata[converter.MetadataEncoding]) != "binary/zlib" {
		t.Fatalf("payload not through the codec: %v %v", p, err)
	}
	if opts.ConnectionOptions.TLS == nil || opts.Credentials == nil {
		t.Error("an API key does not turn TLS and credentials on")
	}
	// Failure messages (which may name tables and files) are encoded too.
	f := opts.FailureConverter.ErrorToFailure(errors.New("copy into sealed_orders failed"))
	if strings.Contains(f.GetMessage(), "sealed_orders") || f.GetEncodedAttributes() == nil ||
		string(f.GetEncodedAttributes().GetMetadata()[converter.MetadataEncoding]) != "binary/zlib" {
		t.Errorf("failure not encoded: %v", f)
	}
	if err := opts.FailureConverter.FailureToError(f); !strings.Contains(err.Error(), "sealed_orders") {
		t.Errorf("encoded failure does not decode: %v", err)
	}
}

// TestUndecodable checks the message of a client without keys reading an
// encrypted answer.
func TestUndecodable(t *testing.T) {
	codec, err := payloadcodec.Parse("k:" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec).ToPayload("status")
	if err != nil {
		t.Fatal(err)
	}
	var out string
	err = undecodable("pipe.default.s.p", converter.GetDefaultDataConverter().FromPayload(p, &out))
	if err == nil || !strings.Contains(err.Error(), "pipe.default.s.p is encrypted") || !strings.Contains(err.Error(), "LAKEPIPE_CODEC_KEY") {
		t.Errorf("error %v", err)
	}
	if other := errors.New("x"); undecodable("id", other) != other {
		t.Error("other errors are changed")
	}
}
