// Package orchestrator runs lakepipe's workflows on Temporal for the
// engine: it starts, signals, queries and stops them.
package orchestrator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/payloadcodec"
	"github.com/lakepipe/lakepipe/internal/tlsfiles"
)

// Config says where Temporal is and how to reach it.
type Config struct {
	Address   string // host:port, default 127.0.0.1:7233
	Namespace string // default "default"
	// TaskQueue of the workflows started here (default workflows.TaskQueue);
	// tests use queues of their own.
	TaskQueue string
	Logger    *slog.Logger
	// MetricsHandler receives the SDK's metrics (the worker serves them on
	// /metrics); nil drops them.
	MetricsHandler client.MetricsHandler
	// Codec, when set, encodes every payload the client writes (workflow
	// inputs and results, signals, queries, activity arguments and
	// results, heartbeats) and decodes those it reads, through
	// converter.NewCodecDataConverter; failure messages and stack traces
	// are moved into an encoded payload too. Payloads it did not encode
	// pass through its Decode (see payloadcodec), so histories written
	// before encryption replay. nil: payloads are stored as plain JSON.
	// Every client and worker of a task queue must use the same keys.
	Codec converter.PayloadCodec
	// TLS of the connection to Temporal; the zero value is plain text
	// (the local dev server).
	TLS TLS
	// APIKey, when set, is sent as "Authorization: Bearer" on every call
	// (Temporal Cloud API keys) and implies TLS. It is never logged nor
	// put in an error.
	APIKey string
}

// TLS says how to secure the connection to Temporal. Any field set, or
// an API key, turns TLS on; CertFile and KeyFile (PEM) go together and make
// it mutual TLS.
type TLS struct {
	Enabled    bool   // TLS with the system's roots even when no other field is set
	CAFile     string // PEM bundle of the CAs that sign the server's certificate (default: the system's roots)
	CertFile   string // client certificate (mTLS)
	KeyFile    string // its private key
	ServerName string // name to verify the server's certificate against (default: the host of Address)
}

func (t TLS) on() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != ""
}

// Validate checks the connection settings without dialling: a client
// certificate without its key (or the reverse), unreadable or invalid PEM
// files. Its errors name files and settings, never a key or an API key.
func (c Config) Validate() error {
	_, err := c.clientOptions()
	return err
}

// clientOptions are the SDK options of a client dialled with c.
func (c Config) clientOptions() (client.Options, error) {
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(discard{}, nil))
	}
	opts := client.Options{HostPort: c.Address, Namespace: c.Namespace, Logger: tlog.NewStructuredLogger(logger), MetricsHandler: c.MetricsHandler}
	if c.Codec != nil {
		opts.DataConverter, opts.FailureConverter = c.Converters()
		// A codec's payloads (lakepipe's are encrypted), most of what a
		// request carries, do not compress: gRPC's gzip (the SDK's
		// default) would cost the worker and the Temporal server CPU for
		// nothing.
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	if c.TLS.on() || c.APIKey != "" {
		tc, err := c.TLS.config()
		if err != nil {
			return client.Options{}, err
		}
		opts.ConnectionOptions.TLS = tc
	}
	if c.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(c.APIKey)
	}
	return opts, nil
}

// Converters are the data and failure converters of clients and workers
// dialled with c (replayers use them too): the SDK's defaults, or with a
// Codec, the default data converter behind it and a failure converter
// that encodes messages and stack traces with it.
func (c Config) Converters() (converter.DataConverter, converter.FailureConverter) {
	if c.Codec == nil {
		return converter.GetDefaultDataConverter(), temporal.GetDefaultFailureConverter()
	}
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c.Codec)
	return dc, temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
}

func (t TLS) config() (*tls.Config, error) {
	tc, err := tlsfiles.Files{CA: t.CAFile, Cert: t.CertFile, Key: t.KeyFile, ServerName: t.ServerName}.Config(
		tlsfiles.Names{CA: "LAKEPIPE_TEMPORAL_TLS_CA", Cert: "LAKEPIPE_TEMPORAL_TLS_CERT", Key: "LAKEPIPE_TEMPORAL_TLS_KEY"})
	if err != nil {
		return nil, fmt.Errorf("Temporal TLS: %w", err)
	}
	return tc, nil
}

// Temporal is an engine.Orchestrator. It dials on first use, so that
// statements that need no workflow work without Temporal.
type Temporal struct {
	cfg        Config
	mu         sync.Mutex
	client     client.Client
	attrsReady bool // lakepipe's search attributes are registered
}

func (t *Temporal) logger() *slog.Logger {
	if t.cfg.Logger != nil {
		return t.cfg.Logger
	}
	return slog.New(slog.NewTextHandler(discard{}, nil))
}

// New returns an orchestrator; nothing is dialled yet.
func New(cfg Config) *Temporal {
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:7233"
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = jobs.TaskQueue
	}
	return &Temporal{cfg: cfg}
}

// Client dials Temporal if needed.
func (t *Temporal) Client() (client.Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client != nil {
		return t.client, nil
	}
	opts, err := t.cfg.clientOptions()
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("Temporal at %s does not answer (is it running? `./task up` starts the local stack): %w", t.cfg.Address, scrub(err, t.cfg.APIKey))
	}
	t.client = c
	return c, nil
}

// scrub removes a secret from an error's text.
func scrub(err error, secret string) error {
	if secret == "" || err == nil || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "***"))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Close closes the client, if one was dialled.
func (t *Temporal) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client != nil {
		t.client.Close()
		t.client = nil
	}
}

// Signal sends a signal to a running pipe.
func (t *Temporal) Signal(ctx context.Context, id, signal string, arg any) error {
	c, err := t.Client()
	if err != nil {
		return err
	}
	if err := c.SignalWorkflow(ctx, id, "", signal, arg); err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return fmt.Errorf("its workflow %s is not running (DESC PIPE shows why)", id)
		}
		return err
	}
	return nil
}

// PipeStatus queries a pipe workflow and describes its execution. For a
// running pipe whose activity keeps failing (ClickHouse or S3 down), reason
// is that failure, with the attempt number: retries are silent otherwise.
func (t *Temporal) PipeStatus(ctx context.Context, id string) (*jobs.PipeStatus, string, string, error) {
	var st jobs.PipeStatus
	state, err := t.Query(ctx, id, jobs.QueryStatus, &st)
	if err != nil || state != "RUNNING" {
		reason := ""
		if state == "NOT_FOUND" {
			reason = "no workflow " + id
		}
		return nil, state, reason, err
	}
	failure, wait := t.pending(ctx, id)
	if wait != nil {
		// An idle pipe's polls since its wait began (AwaitFiles,
		// AwaitRecords) reach the workflow when the wait ends; its
		// heartbeat has them now.
		st.Counters.Turns += int64(wait.Polls)
		if st.Params.Kind != jobs.KindKafka {
			st.List = wait.List
		}
		if wait.LastListing.After(st.Counters.LastTurnTime) {
			st.Counters.LastTurnTime = wait.LastListing
		}
	}
	return &st, state, failure, nil
}

// pending describes the last failure of a retrying activity, and the
// progress of an idle pipe's wait (the last heartbeat of AwaitFiles or
// AwaitRecords).
func (t *Temporal) pending(ctx context.Context, id string) (failure string, wait *jobs.AwaitProgress) {
	c, err := t.Client()
	if err != nil {
		return "", nil
	}
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return "", nil
	}
	dc, _ := t.cfg.Converters()
	for _, pa := range desc.GetPendingActivities() {
		if name := pa.GetActivityType().GetName(); (name == jobs.ActivityAwaitFiles || name == jobs.ActivityAwaitRecords) && pa.GetHeartbeatDetails() != nil {
			var p jobs.AwaitProgress
			if dc.FromPayloads(pa.GetHeartbeatDetails(), &p) == nil {
				wait = &p
			}
		}
		if f := pa.GetLastFailure(); f != nil && pa.GetAttempt() > 1 && failure == "" {
			if f.GetEncodedAttributes() != nil {
				// The message travels encoded (Config.Codec); describe
				// returns the failure as stored.
				f = proto.Clone(f).(*failurepb.Failure)
				converter.DecodeCommonFailureAttributes(dc, f)
			}
			failure = fmt.Sprintf("%s retrying (attempt %d): %s", pa.GetActivityType().GetName(), pa.GetAttempt(), f.GetMessage())
		}
	}
	return failure, wait
}

// Stop asks the workflow to end after its current turn.
func (t *Temporal) Stop(ctx context.Context, id string) error {
	c, err := t.Client()
	if err != nil {
		return err
	}
	err = c.SignalWorkflow(ctx, id, "", jobs.SignalDrop, nil)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}

// Terminate ends a workflow at once (tests and operators; DROP PIPE asks
// politely with Stop instead).
func (t *Temporal) Terminate(ctx context.Context, id, reason string) error {
	c, err := t.Client()
	if err != nil {
		return err
	}
	err = c.TerminateWorkflow(ctx, id, "", reason)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}

// Start starts any lakepipe workflow by its registered name; a leftover run
// under the same id is terminated first. vis, when not nil, gives its
// search attributes and memo (when the namespace has the attributes).
func (t *Temporal) Start(ctx context.Context, id, workflow string, input any, vis *jobs.Visibility) error {
	c, err := t.Client()
	if err != nil {
		return err
	}
	_, err = c.ExecuteWorkflow(ctx, t.startOptions(ctx, c, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                t.cfg.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, vis), workflow, input)
	return err
}

// Wait waits for the latest run of a workflow to end and decodes its result
// into out (when not nil); a run that failed is an error.
func (t *Temporal) Wait(ctx context.Context, id string, out any) error {
	c, err := t.Client()
	if err != nil {
		return err
	}
	return undecodable(id, c.GetWorkflow(ctx, id, "").Get(ctx, out))
}

// Query runs a workflow's status query into out and returns the
// execution state (RUNNING, COMPLETED, FAILED, NOT_FOUND, …); out is only
// filled for a running workflow.
func (t *Temporal) Query(ctx context.Context, id, query string, out any) (string, error) {
	c, err := t.Client()
	if err != nil {
		return "", err
	}
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return "NOT_FOUND", nil
		}
		return "", err
	}
	// The newest run answers; a run that continued as new has a running
	// successor, which is what describe returns for an empty run id.
	status := desc.GetWorkflowExecutionInfo().GetStatus()
	if status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return strings.ToUpper(strings.TrimPrefix(enumspb.WorkflowExecutionStatus_name[int32(status)], "WORKFLOW_EXECUTION_STATUS_")), nil
	}
	state := "RUNNING"
	// A query needs a worker: a missing one must not hang DESC.
	qctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(qctx, id, "", query)
	if err != nil {
		return state, fmt.Errorf("no worker answers for %s (start one: lakepipe worker): %w", id, err)
	}
	return state, undecodable(id, v.Get(out))
}

// undecodable explains the error of an encrypted answer read by a client
// that has no codec (LAKEPIPE_CODEC_KEY unset); other errors are returned
// as they are.
func undecodable(id string, err error) error {
	if errors.Is(err, converter.ErrEncodingIsNotSupported) && strings.Contains(err.Error(), payloadcodec.Encoding) {
		return fmt.Errorf("the answer of %s is encrypted and this client holds no key: set %s to the keys the workers use", id, payloadcodec.EnvKey)
	}
	return err
}
