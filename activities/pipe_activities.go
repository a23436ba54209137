// Package activities holds the I/O of lakepipe's workflows. Every activity
// is idempotent: running it twice leaves the same rows, history and files
// as running it once (see docs/exactly-once.md).
package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/fileread"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/metrics"
	"github.com/lakepipe/lakepipe/internal/pipehistory"
	"github.com/lakepipe/lakepipe/internal/progress"
)

// Activities are registered on the worker with their dependencies.
type Activities struct {
	Engine *engine.Engine
	// Parallel is how many files of one batch load at once (default 4).
	Parallel int
	Metrics  *metrics.Worker
	// StallTimeout is how long a copy (a Kafka batch) may go without
	// reading a byte or finishing a file (reading a record) before its
	// attempt gives up, so that Temporal retries it (default
	// DefaultStallTimeout).
	StallTimeout time.Duration
	// eng, when set, stands in for Engine: tests set a fake (see
	// engineAPI).
	eng engineAPI
	// waits: the AwaitFiles attempts running here, one per pipe.
	waits waits
}

// DefaultStallTimeout is Activities.StallTimeout's default.
const DefaultStallTimeout = 10 * time.Minute

// errStalled ends a copy attempt that made no progress for StallTimeout.
var errStalled = errors.New("no progress")

func (a *Activities) open(ctx context.Context, p jobs.PipeParams) (pipeRun, error) {
	run, err := a.api().openPipe(ctx, p)
	if errors.Is(err, core.ErrPipeGone) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), jobs.ErrTypePipeGone, err)
	}
	return run, classify(err)
}

// classify makes an error the activity returns fit for Temporal: one a
// retry cannot fix (engine.IsPermanent) is non-retryable of type
// PipeInvalid, which pauses the pipe with it as its invalid_reason; any
// other is retried with backoff. Either way its text is bounded, since it
// travels in the history.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		if app == err {
			return err
		}
		// Temporal looks only at the outermost error's type: one that
		// wraps an application error would arrive as a plain, retryable
		// error with its whole text. Keep the type and retry choice.
		return temporal.NewApplicationErrorWithOptions(errtext.Cap(err.Error(), errtext.MaxMessage), app.Type(),
			temporal.ApplicationErrorOptions{NonRetryable: app.NonRetryable()})
	}
	if core.IsPermanent(err) {
		// The cause is not attached: its text is the message already, and
		// a wrapped driver error may be large.
		return temporal.NewNonRetryableApplicationError(errtext.Cap(err.Error(), errtext.MaxMessage), jobs.ErrTypePipeInvalid, nil)
	}
	return bounded(err)
}

// bounded is err with its text capped, as every error an activity returns
// travels in the workflow's history.
func bounded(err error) error {
	if err == nil {
		return nil
	}
	if msg := errtext.Cap(err.Error(), errtext.MaxMessage); len(msg) < len(err.Error()) {
		return errors.New(msg)
	}
	return err
}

// ListFiles lists the files a pipe has not loaded yet. It heartbeats while
// it works, however long a large volume takes to list, so that a worker
// killed mid-listing is noticed within the heartbeat timeout rather than
// at the end of the listing's start-to-close timeout.
func (a *Activities) ListFiles(ctx context.Context, in jobs.ListInput) (jobs.ListResult, error) {
	defer keepAlive(ctx)()
	run, err := a.open(ctx, in.Params)
	if err != nil {
		return jobs.ListResult{}, err
	}
	return a.list(ctx, run, in)
}

func (a *Activities) list(ctx context.Context, run pipeRun, in jobs.ListInput) (jobs.ListResult, error) {
	max := in.Params.MaxFilesPerTurn
	if max <= 0 {
		max = 500
	}
	res, err := run.ListFiles(ctx, in.Hint, max, in.State)
	if err != nil {
		return jobs.ListResult{}, classify(err)
	}
	var oldest time.Time
	for _, f := range res.Files {
		if oldest.IsZero() || f.Modified.Before(oldest) {
			oldest = f.Modified
		}
	}
	a.Metrics.Backlog(in.Params, len(res.Files)+res.Backlog, oldest)
	return res, nil
}

// ListNewFiles is ListFiles for a pipe whose listing is incremental, run
// as a local activity (a short call inside the pipe's workflow task): when
// a full listing is due it lists nothing and says so (NeedFull), and the
// workflow runs ListFiles, which heartbeats however long the listing.
func (a *Activities) ListNewFiles(ctx context.Context, in jobs.ListInput) (jobs.ListResult, error) {
	run, err := a.open(ctx, in.Params)
	if err != nil {
		return jobs.ListResult{}, err
	}
	if run.FullListingDue(in.State) {
		return jobs.ListResult{NeedFull: true, State: in.State}, nil
	}
	return a.list(ctx, run, in)
}

// CopyFiles loads files, several at a time, heartbeating after each. A
// retried attempt skips the files its predecessor finished (recorded in the
// heartbeat, and in any case in load_history).
func (a *Activities) CopyFiles(ctx context.Context, in jobs.CopyInput) (jobs.CopyResult, error) {
	start := time.Now()
	res, err := a.copyFiles(ctx, in)
	t := turnOf(ctx, in.Params, start, err)
	t.Files = int64(len(in.Files))
	for _, f := range in.Files {
		t.Bytes += f.Size
	}
	for _, r := range res.Files {
		t.Rows += r.Rows
		t.Rejected += r.Rejected
		if r.Status == jobs.FileFailed {
			t.Failed++
			if t.Error == "" {
				t.Error = r.Path + ": " + r.FirstError
			}
		}
	}
	a.recordTurn(ctx, t, err)
	return res, err
}

// copyFiles is CopyFiles but for its job history.
func (a *Activities) copyFiles(ctx context.Context, in jobs.CopyInput) (jobs.CopyResult, error) {
	run, err := a.open(ctx, in.Params)
	if err != nil {
		return jobs.CopyResult{}, err
	}
	done := map[string]jobs.FileResult{}
	if activity.HasHeartbeatDetails(ctx) {
		var prev []jobs.FileResult
		if activity.GetHeartbeatDetails(ctx, &prev) == nil {
			for _, r := range prev {
				done[r.Path] = r
			}
		}
	}
	hint := run.CopyJobHint()
	par := cmp.Or(hint.Parallelism, a.Parallel, 4)
	var (
		mu       sync.Mutex
		results  = make([]jobs.FileResult, len(in.Files))
		finished []jobs.FileResult
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, par)
	)
	for _, r := range done {
		finished = append(finished, r)
	}
	// Progress: the bytes read of the files and the files finished, shown
	// in the heartbeat's second detail (the Temporal UI's pending
	// activity) and watched: an attempt that makes none for StallTimeout
	// gives up, and Temporal retries it.
	read := &progress.Counter{}
	var total int64
	for _, f := range in.Files {
		total += f.Size
	}
	// details are the finished files (what a retry skips) and the
	// progress; mu must be held.
	details := func() []any {
		return []any{append([]jobs.FileResult(nil), finished...),
			jobs.CopyProgress{Files: len(in.Files), FilesDone: len(finished), Bytes: total, BytesRead: read.Load()}}
	}
	beat := func() { activity.RecordHeartbeat(ctx, details()...) }
	stall := cmp.Or(a.StallTimeout, DefaultStallTimeout)
	// The watch heartbeats on a ticker as well, so that a single large
	// file does not look like a dead worker.
	ctx, stop := watch(progress.With(ctx, read), stall,
		func() int64 { mu.Lock(); defer mu.Unlock(); return read.Load() + int64(len(finished)) },
		func() []any { mu.Lock(); defer mu.Unlock(); return details() })
	defer stop()
	// Small files load in batches, one INSERT and one load_history write
	// per batch (loading.PipeRun.LoadBatch); the others one by one, par at
	// a time, each streamed.
	var large []int
	var batch []int
	var batchBytes int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		refs := make([]jobs.FileRef, len(batch))
		for k, i := range batch {
			refs[k] = in.Files[i]
		}
		start := time.Now()
		rs, err := loadBatch(ctx, run, refs, smallFileReaders(par))
		if err == nil && len(rs) != len(refs) {
			err = fmt.Errorf("pipe %s: a batch of %d files gave %d results", in.Params.Name, len(refs), len(rs))
		}
		if err != nil {
			a.Metrics.Error(in.Params)
			return err
		}
		took := time.Since(start) / time.Duration(len(batch))
		mu.Lock()
		defer mu.Unlock()
		for k, i := range batch {
			results[i] = rs[k]
			finished = append(finished, rs[k])
			a.Metrics.File(in.Params, rs[k], in.Files[i], took)
		}
		beat()
		batch, batchBytes = batch[:0], 0
		return nil
	}
	for i, f := range in.Files {
		if r, ok := done[f.Path]; ok {
			results[i] = r
			continue
		}
		if hint.MaxFileSize > 0 && f.Size > hint.MaxFileSize {
			r, err := run.RejectTooLarge(ctx, f, hint.MaxFileSize)
			if err != nil {
				return jobs.CopyResult{}, classify(err)
			}
			results[i] = r
			mu.Lock()
			finished = append(finished, r)
			mu.Unlock()
			continue
		}
		if f.Size > fileread.StageFileBytes {
			large = append(large, i)
			continue
		}
		if len(batch) == fileread.StageBatchFiles || batchBytes+f.Size > fileread.StageBatchBytes {
			if err := flush(); err != nil {
				if serr := stalled(ctx); serr != nil {
					return jobs.CopyResult{}, serr
				}
				return jobs.CopyResult{}, classify(err)
			}
		}
		batch = append(batch, i)
		batchBytes += f.Size
	}
	if err := flush(); err != nil {
		if serr := stalled(ctx); serr != nil {
			return jobs.CopyResult{}, serr
		}
		return jobs.CopyResult{}, classify(err)
	}
	for _, i := range large {
		f := in.Files[i]
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, f jobs.FileRef) {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			r, err := loadOne(ctx, run, f)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				a.Metrics.Error(in.Params)
				return
			}
			results[i] = r
			finished = append(finished, r)
			a.Metrics.File(in.Params, r, f, time.Since(start))
			beat()
		}(i, f)
	}
	wg.Wait()
	if err := stalled(ctx); err != nil {
		return jobs.CopyResult{}, err // retryable: the next attempt starts afresh
	}
	if firstErr != nil {
		return jobs.CopyResult{}, classify(firstErr)
	}
	return jobs.CopyResult{Files: results}, nil
}

// turnOf starts the job-history row of this activity's turn.
func turnOf(ctx context.Context, p jobs.PipeParams, start time.Time, err error) pipehistory.Turn {
	info := activity.GetInfo(ctx)
	t := pipehistory.Turn{QueryTag: info.WorkflowExecution.ID, Schema: p.Schema, Pipe: p.Name, RunID: info.WorkflowExecution.RunID,
		JobID: info.ActivityID, Kind: p.Kind, Start: start, End: time.Now(), Status: pipehistory.Succeeded}
	if err != nil {
		t.Status, t.Error = pipehistory.Failed, errtext.Cap(err.Error(), errtext.MaxMessage)
	}
	return t
}

// recordTurn writes a turn's job-history row. It comes after the turn's
// commit point, so failing to write it fails nothing; an attempt that lost
// its lease writes none (the attempt that replaced it does).
func (a *Activities) recordTurn(ctx context.Context, t pipehistory.Turn, err error) {
	if errors.Is(err, errFenced) {
		return
	}
	t.Error = errtext.Cap(t.Error, errtext.MaxMessage)
	if rerr := a.api().recordTurn(ctx, t); rerr != nil {
		activity.GetLogger(ctx).Warn("job history", "pipe", t.Pipe, "error", rerr)
	}
}

// loadOne loads a file on a goroutine of its own, where a panic would end
// the process: the engine turns panics of reading and converting into the
// file's FAILED record; one anywhere else fails this attempt, and the
// retry goes on.
func loadOne(ctx context.Context, run pipeRun, f jobs.FileRef) (r jobs.FileResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("panic in a pipe's load", "pipe", run.pipeName(), "file", f.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("pipe %s: load of %s failed: %s", run.pipeName(), f.Path, errtext.Cap(fmt.Sprint(p), errtext.MaxValue))
		}
	}()
	return run.LoadFile(ctx, f)
}

// loadBatch is loadOne for a batch of small files.
func loadBatch(ctx context.Context, run pipeRun, files []jobs.FileRef, par int) (rs []jobs.FileResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("panic in a pipe's batch load", "pipe", run.pipeName(), "files", len(files), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("pipe %s: load of a batch of %d files failed: %s", run.pipeName(), len(files), errtext.Cap(fmt.Sprint(p), errtext.MaxValue))
		}
	}()
	return run.LoadBatch(ctx, files, par)
}

// smallFileReaders is how many small files of a batch are read at once:
// reading one is mostly waiting for the object store's answer, so more
// than the large-file parallelism, which is bound by CPU.
func smallFileReaders(par int) int { return min(4*par, 32) }
