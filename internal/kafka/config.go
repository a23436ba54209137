// Package kafka reads one topic for a Kafka pipe with franz-go: offsets are
// given and returned explicitly (the pipe's workflow keeps them), the
// consumer group only mirrors them so that standard tools show the lag.
package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/lakepipe/lakepipe/internal/tlsfiles"
)

// Source is what READ_KAFKA names: brokers, one topic, the group whose
// offsets mirror the pipe's, and client settings from its map(…).
type Source struct {
	Bootstrap []string
	Topic     string
	Group     string
	Config    map[string]string
	// MaxBatchBytes bounds a record batch decompressed (the worker's
	// LAKEPIPE_MAX_KAFKA_BATCH_BYTES); 0 leaves the Kafka client's 1 GiB.
	// Reading a batch past it fails with a *BatchTooLargeError.
	MaxBatchBytes int64
	// MaxFetchMemory bounds what the record batches a consumer fetches
	// between two polls take decompressed and decoded (the worker's
	// LAKEPIPE_MAX_KAFKA_FETCH_MEMORY; see fetchBudget); 0: no bound.
	// Passing it fails as MaxBatchBytes does, with Fetch set.
	MaxFetchMemory int64
}

// defaultFetchMaxBytes is fetch.max.bytes when the map does not set it.
const defaultFetchMaxBytes = 1 << 20

// Settings derived from Config; see Known for the keys.
type settings struct {
	opts []kgo.Opt
	// resetLatest starts a new pipe at the end of the topic instead of its
	// beginning (auto.offset.reset = latest).
	resetLatest    bool
	readCommitted  bool
	maxPollRecords int
	fetchMax       int32 // fetch.max.bytes as sent
}

// Known lists the READ_KAFKA map keys lakepipe understands, with what they
// do. A "kafka." prefix is accepted on every key.
var Known = map[string]string{
	"auto.offset.reset":                     "earliest (default) or latest: where a new pipe starts when its group has no committed offsets",
	"security.protocol":                     "PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL",
	"sasl.mechanism":                        "PLAIN (default), SCRAM-SHA-256 or SCRAM-SHA-512",
	"sasl.username":                         "SASL user",
	"sasl.password":                         "SASL password (kept secret)",
	"ssl.ca.location":                       "PEM file of the CA that signed the brokers' certificates",
	"ssl.certificate.location":              "PEM client certificate (mutual TLS)",
	"ssl.key.location":                      "PEM client key (mutual TLS)",
	"ssl.endpoint.identification.algorithm": "https (default) checks the broker host name; none skips that check only (the certificate must still be signed by a trusted CA)",
	"isolation.level":                       "read_committed (default: records of aborted transactions are never loaded) or read_uncommitted",
	"fetch.max.bytes":                       "upper bound of one fetch response (bytes; default 1048576, 1 MiB; at most the worker's LAKEPIPE_MAX_KAFKA_FETCH_MEMORY / 25, 10 MiB by default)",
	"max.partition.fetch.bytes":             "upper bound per partition of one fetch (bytes)",
	"fetch.max.wait.ms":                     "how long a fetch waits for data (default 500)",
	"max.poll.records":                      "most records one pipe turn loads (default 500000); a backlog continues in the next turn at once",
	"client.id":                             "client id the brokers log",
	"request.timeout.ms":                    "extra time allowed for a request beyond its own timeout",
}

// SecretKey reports whether a map key holds a secret: its value is kept out
// of every output and log.
func SecretKey(k string) bool {
	k = strings.ToLower(strings.TrimPrefix(strings.ToLower(k), "kafka."))
	return strings.Contains(k, "password") || strings.Contains(k, "secret") || k == "sasl.jaas.config"
}

// KnownKeys lists the known keys, sorted, for error messages.
func KnownKeys() string {
	keys := make([]string, 0, len(Known))
	for k := range Known {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// Validate checks a source without connecting.
func (s Source) Validate() error {
	_, err := s.settings()
	return err
}

func (s Source) settings() (*settings, error) {
	if len(s.Bootstrap) == 0 {
		return nil, fmt.Errorf("READ_KAFKA: the bootstrap servers (first argument) are empty")
	}
	if s.Topic == "" {
		return nil, fmt.Errorf("READ_KAFKA: the topic (second argument) is empty")
	}
	st := &settings{maxPollRecords: 500000}
	st.opts = append(st.opts, kgo.SeedBrokers(s.Bootstrap...))
	if s.MaxBatchBytes > 0 {
		st.opts = append(st.opts, kgo.MaxDecompressBatchBytes(int(min(s.MaxBatchBytes, math.MaxInt32))))
	}
	cfg := map[string]string{}
	for k, v := range s.Config {
		k = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(k)), "kafka.")
		if _, ok := Known[k]; !ok {
			return nil, fmt.Errorf("READ_KAFKA: unknown setting %q in map(…) (known: %s)", k, KnownKeys())
		}
		cfg[k] = strings.TrimSpace(v)
	}
	num := func(k string, min int) (int, bool, error) {
		v, ok := cfg[k]
		if !ok || v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			return 0, false, fmt.Errorf("READ_KAFKA: %s = %q: expected a whole number ≥ %d", k, v, min)
		}
		return n, true, nil
	}
	switch strings.ToLower(cfg["auto.offset.reset"]) {
	case "", "earliest", "smallest", "beginning":
	case "latest", "largest", "end":
		st.resetLatest = true
	default:
		return nil, fmt.Errorf("READ_KAFKA: auto.offset.reset = %q: expected earliest or latest", cfg["auto.offset.reset"])
	}
	switch strings.ToLower(cfg["isolation.level"]) {
	case "read_uncommitted":
	case "", "read_committed":
		st.readCommitted = true
		st.opts = append(st.opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	default:
		return nil, fmt.Errorf("READ_KAFKA: isolation.level = %q: expected read_uncommitted or read_committed", cfg["isolation.level"])
	}
	// One fetch brings at most 1 MiB unless the map says otherwise
	// (Kafka's default is 50 MiB; a partition still gets up to its own
	// 1 MiB, so a topic of few partitions reads as fast): what a fetch
	// decodes to stays bounded however many partitions the topic has, and
	// with the worker's heap steady the 1 M-record benchmark took 1.32-1.40
	// worker CPU-s per million against 1.35-2.14 (measured 2026-12-06,
	// docs/benchmarks.md).
	fetchMax := defaultFetchMaxBytes
	if n, ok, err := num("fetch.max.bytes", 1); err != nil {
		return nil, err
	} else if ok {
		fetchMax = n
	}
	if s.MaxFetchMemory > 0 {
		// Batches sent uncompressed reach no decompressor, so the fetch
		// budget does not see them: bounding the fetch keeps what they
		// take decoded within it too.
		fetchMax = int(min(int64(fetchMax), max(s.MaxFetchMemory/uncompressedFactor, 1)))
	}
	st.fetchMax = int32(min(fetchMax, math.MaxInt32))
	st.opts = append(st.opts, kgo.FetchMaxBytes(st.fetchMax))
	if n, ok, err := num("max.partition.fetch.bytes", 1); err != nil {
		return nil, err
	} else if ok {
		st.opts = append(st.opts, kgo.FetchMaxPartitionBytes(int32(n)))
	}
	wait := 500
	if n, ok, err := num("fetch.max.wait.ms", 1); err != nil {
		return nil, err
	} else if ok {
		wait = n
	}
	st.opts = append(st.opts, kgo.FetchMaxWait(time.Duration(wait)*time.Millisecond))
	if n, ok, err := num("max.poll.records", 1); err != nil {
		return nil, err
	} else if ok {
		st.maxPollRecords = n
	}
	if n, ok, err := num("request.timeout.ms", 1); err != nil {
		return nil, err
	} else if ok {
		st.opts = append(st.opts, kgo.RequestTimeoutOverhead(time.Duration(n)*time.Millisecond))
	}
	if id := cfg["client.id"]; id != "" {
		st.opts = append(st.opts, kgo.ClientID(id))
	} else {
		st.opts = append(st.opts, kgo.ClientID("lakepipe"))
	}

	proto := strings.ToUpper(cfg["security.protocol"])
	useTLS, useSASL := false, false
	switch proto {
	case "", "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("READ_KAFKA: security.protocol = %q: expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", cfg["security.protocol"])
	}
	if useTLS {
		tc, err := tlsConfig(cfg)
		if err != nil {
			return nil, err
		}
		st.opts = append(st.opts, kgo.DialTLSConfig(tc))
	}
	if useSASL {
		user, pass := cfg["sasl.username"], cfg["sasl.password"]
		if user == "" {
			return nil, fmt.Errorf("READ_KAFKA: security.protocol %s needs sasl.username and sasl.password", proto)
		}
		switch strings.ToUpper(cfg["sasl.mechanism"]) {
		case "", "PLAIN":
			st.opts = append(st.opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			st.opts = append(st.opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			st.opts = append(st.opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("READ_KAFKA: sasl.mechanism = %q: expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", cfg["sasl.mechanism"])
		}
	}
	return st, nil
}

func tlsConfig(cfg map[string]string) (*tls.Config, error) {
	tc, err := tlsfiles.Files{CA: cfg["ssl.ca.location"], Cert: cfg["ssl.certificate.location"], Key: cfg["ssl.key.location"]}.Config(
		tlsfiles.Names{CA: "ssl.ca.location", Cert: "ssl.certificate.location", Key: "ssl.key.location"})
	if err != nil {
		return nil, fmt.Errorf("READ_KAFKA: %w", err)
	}
	switch strings.ToLower(cfg["ssl.endpoint.identification.algorithm"]) {
	case "", "https":
	case "none":
		// librdkafka's none skips the host name check only. Go has no
		// such switch: the whole check is turned off and made again
		// here without the name, so an untrusted certificate still fails.
		tc.InsecureSkipVerify = true
		roots := tc.RootCAs // nil: the system's
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
				return fmt.Errorf("the broker's certificate: %w", err)
			}
			return nil
		}
	default:
		return nil, fmt.Errorf("READ_KAFKA: ssl.endpoint.identification.algorithm = %q: expected https or none", cfg["ssl.endpoint.identification.algorithm"])
	}
	return tc, nil
}
