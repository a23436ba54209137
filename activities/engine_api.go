package activities

import (
	"context"

	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/kafkaload"
	"github.com/lakepipe/lakepipe/internal/loading"
	"github.com/lakepipe/lakepipe/internal/pipehistory"
)

// engineAPI is all the activities use of the engine. They reach it only
// through this, so that their own logic (resuming from heartbeats, turning
// errors into Temporal's, batching files) can be tested against a fake,
// without ClickHouse, S3 or a Temporal server. engineOf is the real one.
type engineAPI interface {
	// openPipe is Engine.WithSchema(p.Schema).OpenPipe.
	openPipe(ctx context.Context, p jobs.PipeParams) (pipeRun, error)
	// openKafkaPipe is Engine.WithSchema(p.Schema).OpenKafkaPipe.
	openKafkaPipe(ctx context.Context, p jobs.PipeParams) (kafkaRun, error)
	// refreshDynamicTable is Engine.WithSchema(schema).RefreshDynamicTable.
	refreshDynamicTable(ctx context.Context, schema, name, trigger string) (jobs.RefreshResult, error)
	// planRefresh is Engine.WithSchema(schema).PlanRefresh.
	planRefresh(ctx context.Context, schema, name string) ([]jobs.DynamicTableParams, error)
	// waitRefresh is Engine.WaitRefresh.
	waitRefresh(ctx context.Context, workflowID string) (jobs.RefreshChainResult, error)
	// maintain is Engine.Maintain.
	maintain(ctx context.Context) error
	// recordTurn is pipehistory.Record on the engine's store.
	recordTurn(ctx context.Context, t pipehistory.Turn) error
}

// pipeRun is what the volume pipe activities use of a *loading.PipeRun.
type pipeRun interface {
	// pipeName is PipeRun.Name, which panics are reported under.
	pipeName() string
	ListFiles(ctx context.Context, hints []string, limit int, state jobs.ListState) (jobs.ListResult, error)
	FullListingDue(state jobs.ListState) bool
	LoadFile(ctx context.Context, f jobs.FileRef) (jobs.FileResult, error)
	LoadBatch(ctx context.Context, files []jobs.FileRef, par int) ([]jobs.FileResult, error)
	CopyJobHint() loading.CopyJobHint
	RejectTooLarge(ctx context.Context, f jobs.FileRef, limit int64) (jobs.FileResult, error)
}

// kafkaRun is what the Kafka pipe activities use of a
// *kafkaload.KafkaPipeRun.
type kafkaRun interface {
	// withWarn is KafkaPipeRun.WithWarn: a run of the caller's own (the
	// opened one is shared between turns).
	withWarn(warn func(msg string)) kafkaRun
	InitialOffsets(ctx context.Context) ([]jobs.PartitionOffset, error)
	ResetOffsets(ctx context.Context, to string) ([]jobs.PartitionOffset, error)
	EndOffsets(ctx context.Context) ([]jobs.PartitionOffset, error)
	LoadBatch(ctx context.Context, in jobs.KafkaBatchInput, retried bool) (jobs.KafkaBatchResult, error)
}

// api is the engine the activities work with: the fake a test set, else
// Engine.
func (a *Activities) api() engineAPI {
	if a.eng != nil {
		return a.eng
	}
	return engineOf{a.Engine}
}

// engineOf is engineAPI over the real engine: each method is the call the
// activities made before there was an interface, unchanged.
type engineOf struct{ e *engine.Engine }

func (e engineOf) openPipe(ctx context.Context, p jobs.PipeParams) (pipeRun, error) {
	run, err := e.e.WithSchema(p.Schema).OpenPipe(ctx, p)
	if err != nil {
		return nil, err
	}
	return volumeRun{run}, nil
}

func (e engineOf) openKafkaPipe(ctx context.Context, p jobs.PipeParams) (kafkaRun, error) {
	run, err := e.e.WithSchema(p.Schema).OpenKafkaPipe(ctx, p)
	if err != nil {
		return nil, err
	}
	return kafkaPipeRun{run}, nil
}

func (e engineOf) refreshDynamicTable(ctx context.Context, schema, name, trigger string) (jobs.RefreshResult, error) {
	return e.e.WithSchema(schema).RefreshDynamicTable(ctx, name, trigger)
}

func (e engineOf) planRefresh(ctx context.Context, schema, name string) ([]jobs.DynamicTableParams, error) {
	return e.e.WithSchema(schema).PlanRefresh(ctx, name)
}

func (e engineOf) waitRefresh(ctx context.Context, workflowID string) (jobs.RefreshChainResult, error) {
	return e.e.WaitRefresh(ctx, workflowID)
}

func (e engineOf) maintain(ctx context.Context) error { return e.e.Maintain(ctx) }

// volumeRun is pipeRun over the real *loading.PipeRun.
type volumeRun struct{ *loading.PipeRun }

func (r volumeRun) pipeName() string { return r.Name }

// kafkaPipeRun is kafkaRun over the real *kafkaload.KafkaPipeRun.
type kafkaPipeRun struct{ *kafkaload.KafkaPipeRun }

func (r kafkaPipeRun) withWarn(warn func(msg string)) kafkaRun {
	return kafkaPipeRun{r.WithWarn(warn)}
}

func (e engineOf) recordTurn(ctx context.Context, t pipehistory.Turn) error {
	return pipehistory.Record(ctx, e.e.St, t)
}
