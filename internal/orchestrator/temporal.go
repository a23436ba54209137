// Package orchestrator runs lakepipe's workflows on Temporal for the
// engine: it starts, signals, queries and stops them.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/lakepipe/lakepipe/workflows"
)

// Config says where Temporal is.
type Config struct {
	Address   string // host:port, default 127.0.0.1:7233
	Namespace string // default "default"
	// TaskQueue of the workflows started here (default workflows.TaskQueue);
	// tests use queues of their own.
	TaskQueue string
	Logger    *slog.Logger
}

// Temporal is an engine.Orchestrator. It dials on first use, so that
// statements that need no workflow work without Temporal.
type Temporal struct {
	cfg    Config
	mu     sync.Mutex
	client client.Client
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
		cfg.TaskQueue = workflows.TaskQueue
	}
	return &Temporal{cfg: cfg}
}

// FromClient wraps a client the caller already has (the worker's).
func FromClient(c client.Client, taskQueue string) *Temporal {
	if taskQueue == "" {
		taskQueue = workflows.TaskQueue
	}
	return &Temporal{client: c, cfg: Config{TaskQueue: taskQueue}}
}

// Client dials Temporal if needed.
func (t *Temporal) Client() (client.Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client != nil {
		return t.client, nil
	}
	logger := t.cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(discard{}, nil))
	}
	c, err := client.Dial(client.Options{HostPort: t.cfg.Address, Namespace: t.cfg.Namespace, Logger: tlog.NewStructuredLogger(logger)})
	if err != nil {
		return nil, fmt.Errorf("Temporal at %s does not answer (is it running? `./task up` starts the local stack): %w", t.cfg.Address, err)
	}
	t.client = c
	return c, nil
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
func (t *Temporal) PipeStatus(ctx context.Context, id string) (*workflows.PipeStatus, string, string, error) {
	var st workflows.PipeStatus
	state, err := t.Query(ctx, id, workflows.QueryStatus, &st)
	if err != nil || state != "RUNNING" {
		reason := ""
		if state == "NOT_FOUND" {
			reason = "no workflow " + id
		}
		return nil, state, reason, err
	}
	return &st, state, t.pendingFailure(ctx, id), nil
}

// pendingFailure describes the last failure of a retrying activity.
func (t *Temporal) pendingFailure(ctx context.Context, id string) string {
	c, err := t.Client()
	if err != nil {
		return ""
	}
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return ""
	}
	for _, pa := range desc.GetPendingActivities() {
		if f := pa.GetLastFailure(); f != nil && pa.GetAttempt() > 1 {
			return fmt.Sprintf("%s retrying (attempt %d): %s", pa.GetActivityType().GetName(), pa.GetAttempt(), f.GetMessage())
		}
	}
	return ""
}

// Stop asks the workflow to end after its current turn.
func (t *Temporal) Stop(ctx context.Context, id string) error {
	c, err := t.Client()
	if err != nil {
		return err
	}
	err = c.SignalWorkflow(ctx, id, "", workflows.SignalDrop, nil)
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
// under the same id is terminated first.
func (t *Temporal) Start(ctx context.Context, id, workflow string, input any) error {
	c, err := t.Client()
	if err != nil {
		return err
	}
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                t.cfg.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, workflow, input)
	return err
}

// Run starts a workflow and waits for its result (into out).
func (t *Temporal) Run(ctx context.Context, id, workflow string, input, out any) error {
	c, err := t.Client()
	if err != nil {
		return err
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             t.cfg.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, workflow, input)
	if err != nil {
		return err
	}
	return run.Get(ctx, out)
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
	return state, v.Get(out)
}
