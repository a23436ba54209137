package core

import (
	"context"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// Visible answers SHOW PIPES and SHOW DYNAMIC TABLES from Temporal's
// visibility store: one list of the schema's running workflows, which
// needs no worker, and a describe for each object the list missed (it may
// lag a moment behind a CREATE, and does not hold ended workflows).
type Visible struct {
	orch   Orchestrator
	listed map[string]jobs.Listed
}

// Visible lists the running workflows of kinds in the session's schema;
// nil when that cannot be answered from visibility (no Temporal, or a
// namespace without lakepipe's search attributes): callers then ask each
// workflow.
func (e *Core) Visible(ctx context.Context, kinds ...string) *Visible {
	if e.Orch == nil {
		return nil
	}
	listed, err := e.Orch.List(ctx, kinds, e.Cfg.Workspace, e.Cfg.Schema)
	if err != nil {
		return nil
	}
	return &Visible{orch: e.Orch, listed: listed}
}

// Get returns what visibility says of workflow id; ok is false when it
// cannot say (a workflow started without lakepipe's search attributes,
// by an earlier release, or Temporal not answering): callers then ask the
// workflow. A workflow that does not exist is FAILED with Ended NOT_FOUND.
func (v *Visible) Get(ctx context.Context, id string) (l jobs.Listed, ok bool) {
	if v == nil {
		return l, false
	}
	if l, ok := v.listed[id]; ok {
		return l, true
	}
	l, found, err := v.orch.Describe(ctx, id)
	switch {
	case err != nil:
		return l, false
	case !found:
		return jobs.Listed{ID: id, Status: jobs.StatusFailed, Ended: "NOT_FOUND"}, true
	case l.Kind == "":
		return l, false
	}
	return l, true
}
