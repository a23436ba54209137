package workflows

import "go.temporal.io/sdk/workflow"

// Both long-running workflows take their signals through selectors that
// add every signal channel (addSignals): the handlers change state, the
// loop decides. These are the two ways they wait.

// drainSignals takes the signals already delivered, without blocking.
func drainSignals(ctx workflow.Context, addSignals func(workflow.Selector)) {
	for {
		sel := workflow.NewSelector(ctx)
		addSignals(sel)
		if !sel.HasPending() {
			return
		}
		sel.Select(ctx)
	}
}

// awaitTakingSignals waits for f, taking signals as they arrive.
func awaitTakingSignals(ctx workflow.Context, f workflow.Future, addSignals func(workflow.Selector)) {
	for !f.IsReady() {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(f, func(workflow.Future) {})
		addSignals(sel)
		sel.Select(ctx)
	}
}
