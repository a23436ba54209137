package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// updateWait bounds how long a statement waits for a worker to take its
// update. An ALTER then falls back to the signal (which a worker applies
// when one runs); a REFRESH, which needs the refresh's result, fails.
const updateWait = 15 * time.Second

// Why an update was not taken.
var (
	errNoWorker      = errors.New("no worker took it")
	errUnknownUpdate = errors.New("the worker runs an older lakepipe")
)

// Update sends an update (with arg, when not nil) to a running workflow
// and waits for its reply.
// A validator's refusal is returned as an error with its reason. When no
// worker takes the update within updateWait, or the worker's lakepipe
// predates the update, the same request goes as a signal instead, and the
// reply says so.
func (t *Temporal) Update(ctx context.Context, id, name string, arg any, out *jobs.ControlReply) error {
	err := t.update(ctx, id, name, arg, out)
	var why string
	switch {
	case errors.Is(err, errNoWorker):
		why = fmt.Sprintf("no worker answered within %s: sent as a signal, applied when a worker runs (start one: lakepipe worker)", updateWait)
	case errors.Is(err, errUnknownUpdate):
		why = "the worker runs an older lakepipe without updates: sent as a signal"
	default:
		return err
	}
	if err := t.Signal(ctx, id, name, arg); err != nil {
		return err
	}
	*out = jobs.ControlReply{Detail: why}
	return nil
}

// RefreshDynamicTable runs one refresh of a dynamic table (its chain) in
// the table's workflow, through the refresh update, and waits for it
// however long it takes: the workflow runs its refreshes one at a time.
func (t *Temporal) RefreshDynamicTable(ctx context.Context, id string, out *jobs.RefreshChainResult) error {
	err := t.update(ctx, id, jobs.UpdateRefresh, nil, out)
	switch {
	case errors.Is(err, errNoWorker):
		return fmt.Errorf("no worker took the refresh within %s: a refresh runs in a worker (start one: lakepipe worker) — run REFRESH again then", updateWait)
	case errors.Is(err, errUnknownUpdate):
		return fmt.Errorf("the worker running %s has an older lakepipe, without the refresh update: upgrade the workers first", id)
	}
	return err
}

// update sends an update, which a worker must take within updateWait, and
// waits for its outcome into out.
func (t *Temporal) update(ctx context.Context, id, name string, arg any, out any) error {
	c, err := t.Client()
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, updateWait)
	defer cancel()
	opts := client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: name, WaitForStage: client.WorkflowUpdateStageAccepted}
	if arg != nil {
		opts.Args = []any{arg}
	}
	h, err := c.UpdateWorkflow(actx, opts)
	if err == nil {
		err = h.Get(ctx, out)
	}
	var nf *serviceerror.NotFound
	// No worker took it in time: the SDK's timeout error (the server may
	// answer it a moment before actx itself expires) or actx's own.
	var waited *client.WorkflowUpdateServiceTimeoutOrCanceledError
	var app *temporal.ApplicationError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &nf):
		return fmt.Errorf("its workflow %s is not running (DESC shows why)", id)
	case h == nil && (errors.As(err, &waited) || actx.Err() != nil):
		return errNoWorker
	case errors.As(err, &app) && strings.HasPrefix(app.Message(), "unknown update"):
		// The SDK's refusal of an update the workflow has no handler for.
		return errUnknownUpdate
	case errors.As(err, &app):
		return errors.New(app.Message()) // the validator's or handler's reason, without the SDK's wrapping
	}
	return undecodable(id, err)
}
