package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/lakepipe/lakepipe/internal/jobs"
)

// ErrNoAttributes says the namespace lacks lakepipe's search attributes:
// the caller falls back to asking each workflow.
var ErrNoAttributes = errors.New("lakepipe's search attributes are not registered in the Temporal namespace")

// attributesReady reports whether lakepipe's search attributes are
// registered in the namespace, registering those missing when the server
// lets this client (the local dev server does; a managed namespace may
// not: docs/operations.md). A yes is remembered; a no is asked again at
// the next start.
func (t *Temporal) attributesReady(ctx context.Context, c client.Client) bool {
	t.mu.Lock()
	ready := t.attrsReady
	t.mu.Unlock()
	if ready {
		return true
	}
	ops := c.OperatorService()
	have, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: t.cfg.Namespace})
	if err != nil {
		t.logger().Warn("cannot list the namespace's search attributes: workflows start without them", "namespace", t.cfg.Namespace, "error", err)
		return false
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range jobs.SearchAttributeNames {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) > 0 {
		_, err := ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: t.cfg.Namespace, SearchAttributes: missing})
		var exists *serviceerror.AlreadyExists
		if err != nil && !errors.As(err, &exists) {
			t.logger().Warn("cannot register lakepipe's search attributes: workflows start without them (docs/operations.md)", "namespace", t.cfg.Namespace, "error", err)
			return false
		}
	}
	t.mu.Lock()
	t.attrsReady = true
	t.mu.Unlock()
	return true
}

// startOptions adds the search attributes and memo of vis to opts, when
// the namespace has the attributes.
func (t *Temporal) startOptions(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, vis *jobs.Visibility) client.StartWorkflowOptions {
	if vis == nil || !t.attributesReady(ctx, c) {
		return opts
	}
	status := vis.Status
	if status == "" {
		status = jobs.StatusRunning
	}
	attrs := []temporal.SearchAttributeUpdate{
		jobs.AttrKind.ValueSet(vis.Kind), jobs.AttrWorkspace.ValueSet(vis.Workspace),
		jobs.AttrSchema.ValueSet(vis.Schema), jobs.AttrStatus.ValueSet(string(status))}
	// Search attributes are indexed in clear. With a codec, the target
	// table's name stays out of Temporal (the workflow id names only the
	// schema and the object): docs/security.md.
	if t.cfg.Codec == nil {
		attrs = append(attrs, jobs.AttrTable.ValueSet(vis.Table))
	}
	opts.TypedSearchAttributes = temporal.NewSearchAttributes(attrs...)
	if vis.Statement != "" {
		opts.Memo = map[string]any{jobs.MemoStatement: vis.Statement}
	}
	return opts
}

// List returns the running workflows of one kind set, workspace and
// schema from the namespace's visibility store, with their figures. It
// reads one list, whatever the number of workflows, and needs no worker.
// ErrNoAttributes says the namespace cannot answer such a query.
func (t *Temporal) List(ctx context.Context, kinds []string, workspace, schema string) (map[string]jobs.Listed, error) {
	c, err := t.Client()
	if err != nil {
		return nil, err
	}
	quoted := make([]string, len(kinds))
	for i, k := range kinds {
		quoted[i] = queryString(k)
	}
	q := fmt.Sprintf("LakepipeKind IN (%s) AND LakepipeWorkspace = %s AND LakepipeSchema = %s AND ExecutionStatus = 'Running'",
		strings.Join(quoted, ", "), queryString(workspace), queryString(schema))
	out := map[string]jobs.Listed{}
	var token []byte
	for {
		res, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: t.cfg.Namespace, Query: q, PageSize: 1000, NextPageToken: token})
		if err != nil {
			var bad *serviceerror.InvalidArgument
			if errors.As(err, &bad) {
				return nil, fmt.Errorf("%w: %s", ErrNoAttributes, bad.Message)
			}
			return nil, err
		}
		for _, ex := range res.GetExecutions() {
			l := t.listed(ex)
			out[l.ID] = l
		}
		if token = res.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

// Describe returns what visibility would list for one workflow, from its
// execution (authoritative, where a list may lag a few moments behind):
// SHOW uses it for the objects a list did not return. found is false when
// the workflow does not exist.
func (t *Temporal) Describe(ctx context.Context, id string) (l jobs.Listed, found bool, err error) {
	c, err := t.Client()
	if err != nil {
		return l, false, err
	}
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return l, false, nil
		}
		return l, false, err
	}
	return t.listed(desc.GetWorkflowExecutionInfo()), true, nil
}

// listed reads a workflow's search attributes and memo.
func (t *Temporal) listed(ex *workflowpb.WorkflowExecutionInfo) jobs.Listed {
	l := jobs.Listed{ID: ex.GetExecution().GetWorkflowId()}
	attrs := ex.GetSearchAttributes().GetIndexedFields()
	keyword := func(name string) string {
		var s string
		if p := attrs[name]; p != nil {
			// Search attributes are never encoded by a codec: the server
			// indexes them.
			_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
		}
		return s
	}
	l.Kind, l.Schema, l.Table = keyword("LakepipeKind"), keyword("LakepipeSchema"), keyword("LakepipeTable")
	l.Status = jobs.Status(keyword("LakepipeStatus"))
	if st := ex.GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		l.Ended = strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_")
		l.Status = jobs.StatusFailed
	}
	if p := ex.GetMemo().GetFields()[jobs.MemoFigures]; p != nil {
		if l.Kind == jobs.VisibleDynamicTable {
			var f jobs.DynamicTableFigures
			if t.decode(p, &f) == nil {
				l.Refreshed = &f
			}
		} else {
			var f jobs.PipeFigures
			if t.decode(p, &f) == nil {
				l.Figures = &f
			}
		}
	}
	return l
}

// decode reads a payload written through this client's data converter
// (encrypted when a codec is configured).
func (t *Temporal) decode(p *commonpb.Payload, v any) error {
	dc, _ := t.cfg.Converters()
	return dc.FromPayload(p, v)
}

// queryString quotes a value for a visibility query.
func queryString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// EnsureMaintenanceSchedule creates the task queue's maintenance Schedule
// (jobs.MaintenanceScheduleID) when it does not exist: every hour, a
// MaintenanceWorkflow run, skipped while the previous one still runs. An
// existing Schedule is left as it is (an operator may have paused or
// changed it).
func (t *Temporal) EnsureMaintenanceSchedule(ctx context.Context) error {
	c, err := t.Client()
	if err != nil {
		return err
	}
	id := jobs.MaintenanceScheduleID(t.cfg.TaskQueue)
	_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      id,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: jobs.MaintenanceEvery}}},
		Action:  &client.ScheduleWorkflowAction{ID: id, Workflow: jobs.MaintenanceWorkflowName, TaskQueue: t.cfg.TaskQueue},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		// A new deployment maintains at once, as the ticker of earlier
		// releases did at a worker's start.
		TriggerImmediately: true,
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("maintenance schedule %s: %w", id, err)
	}
	return nil
}
