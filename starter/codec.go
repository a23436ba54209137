package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/lakepipe/lakepipe/internal/payloadcodec"
)

// maxCodecBody bounds a /decode or /encode request: the Temporal UI sends
// the payloads of a page of history at once, each at most a few MB.
const maxCodecBody = 64 << 20

// runCodecServer runs the codec server: the Temporal UI (and `temporal
// workflow show --codec-endpoint`) send it the encrypted payloads of a
// history to read them in clear. It holds the keys of LAKEPIPE_CODEC_KEY
// and answers only requests bearing LAKEPIPE_CODEC_TOKEN; it never logs a
// payload or a token.
func runCodecServer(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("lakepipe codec-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", env("LAKEPIPE_CODEC_ADDR", "127.0.0.1:8088"), "address of the codec server (LAKEPIPE_CODEC_ADDR)")
	origins := fs.String("cors-origin", env("LAKEPIPE_CODEC_CORS_ORIGIN", "http://localhost:8233"), "origin(s) of the Temporal UI allowed to call it, comma-separated (LAKEPIPE_CODEC_CORS_ORIGIN)")
	certFile := fs.String("tls-cert", env("LAKEPIPE_CODEC_TLS_CERT", ""), "PEM certificate to serve HTTPS with (LAKEPIPE_CODEC_TLS_CERT)")
	keyFile := fs.String("tls-key", env("LAKEPIPE_CODEC_TLS_KEY", ""), "PEM private key of -tls-cert (LAKEPIPE_CODEC_TLS_KEY)")
	logFormat := fs.String("log-format", env("LAKEPIPE_LOG_FORMAT", "json"), "log format: json or text (LAKEPIPE_LOG_FORMAT)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: lakepipe codec-server [flags]\n\nDecrypts (and encrypts) Temporal payloads for the Temporal UI and CLI. Needs, in the\nenvironment only: LAKEPIPE_CODEC_KEY (the workers' keys) and LAKEPIPE_CODEC_TOKEN (the\nbearer token callers must send). See docs/security.md.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(code int, err error) int {
		fmt.Fprintln(stderr, "lakepipe codec-server:", err)
		return code
	}
	codec, err := payloadcodec.FromEnv()
	if err != nil {
		return fail(2, err)
	}
	if codec == nil {
		return fail(2, errors.New(payloadcodec.EnvKey+" is not set: the codec server decrypts with the keys the workers encrypt with"))
	}
	// The token has no flag on purpose: flags show up in process lists.
	token := os.Getenv("LAKEPIPE_CODEC_TOKEN")
	if token == "" {
		return fail(2, errors.New("LAKEPIPE_CODEC_TOKEN is not set: the codec server decrypts for whoever holds it, so it needs one (e.g. `head -c24 /dev/urandom | base64`)"))
	}
	if (*certFile == "") != (*keyFile == "") {
		return fail(2, errors.New("-tls-cert and -tls-key (LAKEPIPE_CODEC_TLS_CERT, LAKEPIPE_CODEC_TLS_KEY) go together"))
	}
	log := newLogger(*logFormat, stderr)
	if len(token) < 16 {
		log.Warn("LAKEPIPE_CODEC_TOKEN is shorter than 16 characters; anyone who guesses it reads every payload")
	}
	var allowed []string
	for _, o := range strings.Split(*origins, ",") {
		if o = strings.TrimSuffix(strings.TrimSpace(o), "/"); o != "" {
			allowed = append(allowed, o)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(1, fmt.Errorf("listen %s: %w", *listen, err))
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); *certFile == "" && !net.ParseIP(host).IsLoopback() {
		log.Warn("the codec server listens beyond this host without TLS: tokens and payloads travel in clear (set -tls-cert/-tls-key or put a TLS proxy in front)", "addr", ln.Addr().String())
	}
	hs := &http.Server{Handler: codecHandler(codec, token, allowed, log), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() {
		if *certFile != "" {
			done <- hs.ServeTLS(ln, *certFile, *keyFile)
		} else {
			done <- hs.Serve(ln)
		}
	}()
	log.Info("lakepipe codec server running", "addr", ln.Addr().String(), "tls", *certFile != "", "cors_origins", strings.Join(allowed, ","), "encrypt_key_id", codec.EncryptKeyID())
	select {
	case err := <-done:
		return fail(1, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	log.Info("lakepipe codec server stopped")
	return 0
}

// codecHandler serves POST /decode and /encode (any path ending so, as the
// SDK's handler: the UI appends them to its endpoint) to requests bearing
// "Authorization: Bearer <token>", 401 otherwise; it answers CORS
// preflights from the allowed origins (the Temporal UI) and GET /healthz.
// Its log lines name method, path, status and namespace only.
func codecHandler(codec converter.PayloadCodec, token string, origins []string, log *slog.Logger) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(codec)
	want := sha256.Sum256([]byte(token))
	authorized := func(r *http.Request) bool {
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return false
		}
		// Equal-length digests: the comparison tells nothing of the token.
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			log.Info("codec request", "method", r.Method, "path", r.URL.Path, "status", sw.code,
				"namespace", r.Header.Get("X-Namespace"), "origin", r.Header.Get("Origin"), "ms", time.Since(start).Milliseconds())
		}()
		origin := r.Header.Get("Origin")
		allowedOrigin := origin != "" && slices.Contains(origins, origin)
		if allowedOrigin {
			// On every answer, 401 included, so that the UI can read it.
			h := sw.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Add("Vary", "Origin")
		}
		switch {
		case r.Method == http.MethodOptions:
			if !allowedOrigin {
				http.Error(sw, "origin not allowed (LAKEPIPE_CODEC_CORS_ORIGIN)", http.StatusForbidden)
				return
			}
			h := sw.Header()
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Namespace")
			h.Set("Access-Control-Max-Age", "600")
			sw.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodGet && r.URL.Path == "/healthz":
			fmt.Fprintln(sw, "ok")
		case !authorized(r):
			sw.Header().Set("WWW-Authenticate", `Bearer realm="lakepipe codec server"`)
			http.Error(sw, "unauthorized: send Authorization: Bearer <LAKEPIPE_CODEC_TOKEN>", http.StatusUnauthorized)
		default:
			if r.Body != nil {
				r.Body = http.MaxBytesReader(sw, r.Body, maxCodecBody)
			}
			inner.ServeHTTP(sw, r)
		}
	})
}

// statusWriter remembers the status of a response, for the log line.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}
