package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/loading"
	"github.com/lakepipe/lakepipe/internal/metrics"
	"github.com/lakepipe/lakepipe/internal/pipehistory"
)

// The activities run in the SDK's test activity environment, which goes
// through the same task handler, data converter and failure converter as a
// real worker: what a test sees of a result or an error is what a
// workflow would. Only the engine is fake.

// testEnv is an activity environment with a's activities registered.
type testEnv struct {
	*testsuite.TestActivityEnvironment
	beats *beatRecorder
	logs  *logRecorder
}

func newTestEnv(t *testing.T, a *Activities) *testEnv {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	logs := &logRecorder{}
	s.SetLogger(logs)
	env := s.NewTestActivityEnvironment()
	// SetOnActivityHeartbeatListener only sees the heartbeats the SDK
	// would send (it throttles them); an interceptor sees every call.
	beats := &beatRecorder{}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{beats}})
	env.RegisterActivity(a)
	return &testEnv{TestActivityEnvironment: env, beats: beats, logs: logs}
}

// beatRecorder keeps every heartbeat's details, and makes
// activity.GetInfo report attempt when it is set (the test environment
// always runs attempt 1).
type beatRecorder struct {
	interceptor.WorkerInterceptorBase
	attempt int32

	mu    sync.Mutex
	beats [][]any
}

func (r *beatRecorder) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &beatInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, r: r}
}

// fileBeats returns the heartbeats that carried a list of file results,
// in the order they were recorded.
func (r *beatRecorder) fileBeats() [][]jobs.FileResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]jobs.FileResult
	for _, d := range r.beats {
		if len(d) >= 1 {
			if fs, ok := d[0].([]jobs.FileResult); ok {
				out = append(out, fs)
			}
		}
	}
	return out
}

// progress returns the progress detail of the last heartbeat that had one.
func (r *beatRecorder) progress() (jobs.CopyProgress, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.beats) - 1; i >= 0; i-- {
		if d := r.beats[i]; len(d) == 2 {
			if p, ok := d[1].(jobs.CopyProgress); ok {
				return p, true
			}
		}
	}
	return jobs.CopyProgress{}, false
}

type beatInbound struct {
	interceptor.ActivityInboundInterceptorBase
	r *beatRecorder
}

func (i *beatInbound) Init(out interceptor.ActivityOutboundInterceptor) error {
	return i.Next.Init(&beatOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: out}, r: i.r})
}

type beatOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	r *beatRecorder
}

func (o *beatOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	o.r.mu.Lock()
	o.r.beats = append(o.r.beats, slices.Clone(details))
	o.r.mu.Unlock()
	o.Next.RecordHeartbeat(ctx, details...)
}

func (o *beatOutbound) GetInfo(ctx context.Context) activity.Info {
	info := o.Next.GetInfo(ctx)
	if o.r.attempt > 0 {
		info.Attempt = o.r.attempt
	}
	return info
}

// logRecorder is a Temporal logger that keeps the warnings.
type logRecorder struct {
	mu    sync.Mutex
	warns [][]any // message, then key-value pairs
}

func (l *logRecorder) Debug(string, ...any) {}
func (l *logRecorder) Info(string, ...any)  {}
func (l *logRecorder) Error(string, ...any) {}

func (l *logRecorder) Warn(msg string, keyvals ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.warns = append(l.warns, append([]any{msg}, keyvals...))
}

// warned reports whether a warning msg was logged with every pair of kv.
func (l *logRecorder) warned(msg string, kv ...any) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.warns {
		if w[0] != msg {
			continue
		}
		all := true
		for i := 0; i+1 < len(kv); i += 2 {
			found := false
			for j := 1; j+1 < len(w); j++ {
				if w[j] == kv[i] && w[j+1] == kv[i+1] {
					found = true
					break
				}
			}
			all = all && found
		}
		if all {
			return true
		}
	}
	return false
}

// fakeEngine stands in for the engine. Every field left zero answers with
// zero values and no error.
type fakeEngine struct {
	openErr error // from openPipe and openKafkaPipe
	run     *fakeRun
	kafka   *fakeKafka

	refresh     jobs.RefreshResult
	refreshErr  error
	plan        []jobs.DynamicTableParams
	planErr     error
	chain       jobs.RefreshChainResult
	waitErr     error
	maintainErr error

	mu     sync.Mutex
	opened []jobs.PipeParams
	turns  []pipehistory.Turn // the job history written
	calls  []string           // the dynamic-table calls and their arguments
}

func (e *fakeEngine) openPipe(_ context.Context, p jobs.PipeParams) (pipeRun, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opened = append(e.opened, p)
	if e.openErr != nil {
		return nil, e.openErr
	}
	if e.run == nil {
		e.run = &fakeRun{}
	}
	return e.run, nil
}

func (e *fakeEngine) openKafkaPipe(_ context.Context, p jobs.PipeParams) (kafkaRun, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opened = append(e.opened, p)
	if e.openErr != nil {
		return nil, e.openErr
	}
	if e.kafka == nil {
		e.kafka = &fakeKafka{}
	}
	return e.kafka, nil
}

func (e *fakeEngine) record(call string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, call)
}

func (e *fakeEngine) refreshDynamicTable(_ context.Context, schema, name, trigger string) (jobs.RefreshResult, error) {
	e.record("refresh " + schema + "." + name + " " + trigger)
	return e.refresh, e.refreshErr
}

func (e *fakeEngine) planRefresh(_ context.Context, schema, name string) ([]jobs.DynamicTableParams, error) {
	e.record("plan " + schema + "." + name)
	return e.plan, e.planErr
}

func (e *fakeEngine) waitRefresh(_ context.Context, workflowID string) (jobs.RefreshChainResult, error) {
	e.record("wait " + workflowID)
	return e.chain, e.waitErr
}

func (e *fakeEngine) recordTurn(_ context.Context, t pipehistory.Turn) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.turns = append(e.turns, t)
	return nil
}

func (e *fakeEngine) maintain(context.Context) error {
	e.record("maintain")
	return e.maintainErr
}

// fakeRun is a volume pipe's run: it lists what it is told and loads
// every file (LOADED, one row per byte) unless loadFile or loadBatch say
// otherwise. Safe for the concurrent loads of CopyFiles.
type fakeRun struct {
	name string

	files   []jobs.FileRef
	backlog int
	next    jobs.ListState
	listErr error
	fullDue bool
	hint    loading.CopyJobHint

	loadFile  func(f jobs.FileRef) (jobs.FileResult, error)
	loadBatch func(fs []jobs.FileRef) ([]jobs.FileResult, error)
	// stuck, when set, makes LoadFile of that path wait for its context
	// to end (a read that never returns), reading nothing.
	stuck string

	mu        sync.Mutex
	lists     []listCall
	dueAsked  []jobs.ListState
	fileLoads []string   // paths, in no particular order
	rejected  []string   // paths refused as too large
	batches   [][]string // paths of each LoadBatch, in call order
	batchPars []int
}

type listCall struct {
	hints []string
	limit int
	state jobs.ListState
}

func loaded(f jobs.FileRef) jobs.FileResult {
	return jobs.FileResult{Path: f.Path, Status: jobs.FileLoaded, Rows: f.Size}
}

func (r *fakeRun) pipeName() string { return r.name }

func (r *fakeRun) CopyJobHint() loading.CopyJobHint { return r.hint }

func (r *fakeRun) RejectTooLarge(_ context.Context, f jobs.FileRef, limit int64) (jobs.FileResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected = append(r.rejected, f.Path)
	return jobs.FileResult{Path: f.Path, Status: jobs.FileFailed, FirstError: fmt.Sprintf("over %d", limit)}, nil
}

func (r *fakeRun) ListFiles(_ context.Context, hints []string, limit int, state jobs.ListState) (jobs.ListResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists = append(r.lists, listCall{hints: hints, limit: limit, state: state})
	return jobs.ListResult{Files: r.files, Backlog: r.backlog, State: r.next}, r.listErr
}

func (r *fakeRun) FullListingDue(state jobs.ListState) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dueAsked = append(r.dueAsked, state)
	return r.fullDue
}

func (r *fakeRun) LoadFile(ctx context.Context, f jobs.FileRef) (jobs.FileResult, error) {
	r.mu.Lock()
	r.fileLoads = append(r.fileLoads, f.Path)
	r.mu.Unlock()
	if f.Path == r.stuck {
		<-ctx.Done()
		return jobs.FileResult{}, ctx.Err()
	}
	if r.loadFile != nil {
		return r.loadFile(f)
	}
	return loaded(f), nil
}

func (r *fakeRun) LoadBatch(_ context.Context, fs []jobs.FileRef, par int) ([]jobs.FileResult, error) {
	paths := make([]string, len(fs))
	for i, f := range fs {
		paths[i] = f.Path
	}
	r.mu.Lock()
	r.batches = append(r.batches, paths)
	r.batchPars = append(r.batchPars, par)
	r.mu.Unlock()
	if r.loadBatch != nil {
		return r.loadBatch(fs)
	}
	rs := make([]jobs.FileResult, len(fs))
	for i, f := range fs {
		rs[i] = loaded(f)
	}
	return rs, nil
}

// loadedPaths is every path LoadFile or LoadBatch was asked to load,
// sorted.
func (r *fakeRun) loadedPaths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.fileLoads)
	for _, b := range r.batches {
		out = append(out, b...)
	}
	slices.Sort(out)
	return out
}

// fakeKafka is a Kafka pipe's run.
type fakeKafka struct {
	initial, end []jobs.PartitionOffset
	offErr       error
	result       jobs.KafkaBatchResult
	batchErr     error
	warnings     []string // LoadBatch reports them through the Warn it was given
	resetTo      string   // the last ResetOffsets asked for

	mu      sync.Mutex
	warn    func(string)
	batchIn []jobs.KafkaBatchInput
	retried []bool
}

func (k *fakeKafka) withWarn(warn func(msg string)) kafkaRun {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.warn = warn
	return k
}

func (k *fakeKafka) InitialOffsets(context.Context) ([]jobs.PartitionOffset, error) {
	return k.initial, k.offErr
}

func (k *fakeKafka) ResetOffsets(_ context.Context, to string) ([]jobs.PartitionOffset, error) {
	k.resetTo = to
	return k.end, k.offErr
}

func (k *fakeKafka) EndOffsets(context.Context) ([]jobs.PartitionOffset, error) {
	return k.end, k.offErr
}

func (k *fakeKafka) LoadBatch(_ context.Context, in jobs.KafkaBatchInput, retried bool) (jobs.KafkaBatchResult, error) {
	k.mu.Lock()
	k.batchIn = append(k.batchIn, in)
	k.retried = append(k.retried, retried)
	warn := k.warn
	k.mu.Unlock()
	for _, w := range k.warnings {
		if warn != nil {
			warn(w)
		}
	}
	return k.result, k.batchErr
}

// scrape returns the series /metrics serves, by name with labels as
// written, e.g. `lakepipe_pipe_errors_total{pipe="s.p"}`.
func scrape(t *testing.T, m *metrics.Worker) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := map[string]float64{}
	for line := range strings.SplitSeq(rec.Body.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// The value follows the last space: label values may hold
		// spaces, and no timestamps are served.
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// metric is the value of one series (0 when it is absent, as Prometheus
// reads a series not yet created).
func metric(t *testing.T, m *metrics.Worker, series string) float64 {
	t.Helper()
	return scrape(t, m)[series]
}

// metricSum is the sum of every series of the metric name, whatever
// their labels.
func metricSum(t *testing.T, m *metrics.Worker, name string) float64 {
	t.Helper()
	sum := 0.0
	for s, v := range scrape(t, m) {
		if s == name || strings.HasPrefix(s, name+"{") {
			sum += v
		}
	}
	return sum
}

// wantErr is what a test expects of an activity's error: nil for none;
// retryable or not, the application error type when it matters, and the
// message.
type wantErr struct {
	nonRetryable bool
	errType      string // "" when any type will do (retryable errors)
	msg          string
}

// checkErr checks err, as ExecuteActivity returned it, against want.
func checkErr(t *testing.T, err error, want *wantErr) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %+v", *want)
	}
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		t.Fatalf("error %v (%T) is not an application error", err, err)
	}
	if app.NonRetryable() != want.nonRetryable {
		t.Errorf("NonRetryable() = %v, want %v (error %v)", app.NonRetryable(), want.nonRetryable, err)
	}
	if want.errType != "" && app.Type() != want.errType {
		t.Errorf("Type() = %q, want %q", app.Type(), want.errType)
	}
	if app.Message() != want.msg {
		t.Errorf("Message() = %.300q (%d bytes), want %.300q (%d bytes)", app.Message(), len(app.Message()), want.msg, len(want.msg))
	}
}
