package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// visibility keeps a run's LakepipeStatus search attribute and the memo's
// figures in step with its state, upserting only changes: an idle turn
// writes nothing. A run started without lakepipe's search attributes
// upserts nothing at all (the namespace may not know them, and histories
// recorded before them must replay unchanged).
type visibility struct {
	on      bool
	status  string
	figures any // the last figures upserted: a comparable struct
	haveFig bool
}

func newVisibility(ctx workflow.Context) *visibility {
	sa := workflow.GetTypedSearchAttributes(ctx)
	v := &visibility{on: sa.ContainsKey(jobs.AttrKind)}
	v.status, _ = sa.GetKeyword(jobs.AttrStatus)
	return v
}

// showStatus upserts LakepipeStatus when it changed.
func (v *visibility) showStatus(ctx workflow.Context, s jobs.Status) {
	if !v.on || string(s) == v.status {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, jobs.AttrStatus.ValueSet(string(s))); err != nil {
		workflow.GetLogger(ctx).Warn("cannot upsert LakepipeStatus", "error", err)
		return
	}
	v.status = string(s)
}

// showFigures upserts the memo's figures (jobs.PipeFigures or
// jobs.DynamicTableFigures) when they changed. The first call of a run
// upserts them unless they are all zero, so that a run that continued as
// new starts from what it carried over.
func (v *visibility) showFigures(ctx workflow.Context, f any, zero bool) {
	if !v.on || (v.haveFig && f == v.figures) || (!v.haveFig && zero) {
		return
	}
	if err := workflow.UpsertMemo(ctx, map[string]any{jobs.MemoFigures: f}); err != nil {
		workflow.GetLogger(ctx).Warn("cannot upsert the pipe's figures", "error", err)
		return
	}
	v.figures, v.haveFig = f, true
}
