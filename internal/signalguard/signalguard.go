// Package signalguard keeps signals that were not written by a lakepipe
// client holding the payload keys away from lakepipe's workflows, on
// workers that require encryption (LAKEPIPE_CODEC_REQUIRE=true).
//
// Anyone who can call Temporal's API can signal a workflow (`temporal
// workflow signal --name pause`); the signal lands in its history whatever
// the worker thinks of it. What a worker can decide is whether the
// workflow sees it. lakepipe's clients encrypt every payload, and every
// signal they send carries one (a nil argument is encoded as a null
// payload, then encrypted), so a signal with no payload or a clear one
// came from somewhere else: the guard drops it, logs it and counts it
// (lakepipe_signals_refused). The workflow goes on as if it never came.
//
// Deterministic replay: whether a run drops such signals must not depend
// on the setting of the worker that happens to replay it. Each run
// records the setting of the worker that started it (a SideEffect behind
// the version "require-encrypted-signals") before its code runs, and
// decides by that record; runs recorded before the version never drop.
// Signals that arrive in a run's first workflow task, before the record
// exists, are held and delivered, or dropped, right after it, before the
// workflow's code can look at its channels.
package signalguard

import (
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/payloadcodec"
)

const (
	// ChangeID is the version that records the setting in each run.
	ChangeID = "require-encrypted-signals"
	// MetricRefused counts dropped signals (served on the worker's
	// /metrics with the SDK's metrics).
	MetricRefused = "lakepipe_signals_refused"
)

// Interceptor is a worker interceptor; every lakepipe worker and replayer
// installs one, with Require set from LAKEPIPE_CODEC_REQUIRE.
type Interceptor struct {
	interceptor.WorkerInterceptorBase
	// Require: runs started by this worker drop signals whose payloads
	// are missing or not encrypted.
	Require bool
}

// InterceptWorkflow wraps one workflow execution.
func (g *Interceptor) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	in := &inbound{require: g.Require}
	in.Next = next
	return in
}

type inbound struct {
	interceptor.WorkflowInboundInterceptorBase
	require bool // this worker's setting
	decided bool // the run's setting is known
	strict  bool // the run's recorded setting
	held    []heldSignal
}

type heldSignal struct {
	ctx workflow.Context
	in  *interceptor.HandleSignalInput
}

func (g *inbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	if workflow.GetVersion(ctx, ChangeID, workflow.DefaultVersion, 1) >= 1 {
		require := g.require
		if err := workflow.SideEffect(ctx, func(workflow.Context) any { return require }).Get(&g.strict); err != nil {
			return nil, err
		}
	}
	g.decided = true
	held := g.held
	g.held = nil
	for _, h := range held {
		if err := g.deliver(h.ctx, h.in); err != nil {
			return nil, err
		}
	}
	return g.Next.ExecuteWorkflow(ctx, in)
}

func (g *inbound) HandleSignal(ctx workflow.Context, in *interceptor.HandleSignalInput) error {
	if !g.decided {
		g.held = append(g.held, heldSignal{ctx, in})
		return nil
	}
	return g.deliver(ctx, in)
}

func (g *inbound) deliver(ctx workflow.Context, in *interceptor.HandleSignalInput) error {
	if g.strict && !Encrypted(in.Arg) {
		// An error here would fail the workflow task again and again;
		// the signal is dropped instead, and the run goes on.
		workflow.GetLogger(ctx).Warn("dropped a signal whose payload is not encrypted: this worker requires encrypted payloads (LAKEPIPE_CODEC_REQUIRE); lakepipe's own clients encrypt theirs",
			"signal", in.SignalName, "workflow", workflow.GetInfo(ctx).WorkflowExecution.ID)
		workflow.GetMetricsHandler(ctx).Counter(MetricRefused).Inc(1)
		return nil
	}
	return g.Next.HandleSignal(ctx, in)
}

// Encrypted reports whether a signal's payloads are all encrypted; a
// signal without any is not.
func Encrypted(ps *commonpb.Payloads) bool {
	if len(ps.GetPayloads()) == 0 {
		return false
	}
	for _, p := range ps.GetPayloads() {
		if !payloadcodec.IsEncrypted(p) {
			return false
		}
	}
	return true
}

// Replaying is the interceptor list of a replayer: a run decides by the
// setting it recorded, so the replayer's own setting does not matter.
func Replaying() []interceptor.WorkerInterceptor {
	return []interceptor.WorkerInterceptor{&Interceptor{}}
}
