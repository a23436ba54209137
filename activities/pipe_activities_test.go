package activities

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/fileread"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/loading"
	"github.com/lakepipe/lakepipe/internal/metrics"
)

// testPipe is the pipe of these tests; its metrics are labelled "s.p".
var testPipe = jobs.PipeParams{Workspace: "default", Schema: "s", Name: "p", MaxFilesPerTurn: 50}

// small and large are files CopyFiles loads in batches and one by one.
func small(path string) jobs.FileRef { return jobs.FileRef{Path: path, Size: 10} }
func large(path string) jobs.FileRef {
	return jobs.FileRef{Path: path, Size: fileread.StageFileBytes + 1}
}

// series names one pipe metric of testPipe.
func series(name string) string { return name + `{pipe="s.p"}` }

const filesLoaded = `lakepipe_pipe_files_total{pipe="s.p",status="LOADED"}`

// localErr is a local activity's error as its workflow sees it: the test
// environment hands it back as the activity returned it, while a worker
// records it through the failure converter.
func localErr(err error) error {
	var act *temporal.ActivityError
	if !errors.As(err, &act) {
		return err
	}
	fc := temporal.GetDefaultFailureConverter()
	return fc.FailureToError(fc.ErrorToFailure(act.Unwrap()))
}

func byPath(rs []jobs.FileResult) []jobs.FileResult {
	out := slices.Clone(rs)
	slices.SortFunc(out, func(a, b jobs.FileResult) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func TestCopyFilesResumesFromHeartbeat(t *testing.T) {
	// What an earlier attempt finished and heartbeated. Their results
	// differ from what loading again would give (fakeRun loads every file
	// whole), so a result shows where it came from.
	doneA := jobs.FileResult{Path: "a", Status: jobs.FileLoaded, Rows: 7}
	doneC := jobs.FileResult{Path: "c", Status: jobs.FilePartiallyLoaded, Rows: 3, Rejected: 1, FirstError: "bad row"}
	doneBig := jobs.FileResult{Path: "big1", Status: jobs.FileFailed, FirstError: "not gzip"}
	tests := []struct {
		name      string
		files     []jobs.FileRef
		details   any // the earlier attempt's heartbeat; nil: a first attempt
		wantLoads []string
		want      []jobs.FileResult
	}{
		{
			name:      "first attempt loads every file",
			files:     []jobs.FileRef{small("a"), small("b"), small("c")},
			wantLoads: []string{"a", "b", "c"},
			want:      []jobs.FileResult{loaded(small("a")), loaded(small("b")), loaded(small("c"))},
		},
		{
			name:      "small files done are skipped and reported",
			files:     []jobs.FileRef{small("a"), small("b"), small("c"), small("d")},
			details:   []jobs.FileResult{doneC, doneA},
			wantLoads: []string{"b", "d"},
			want:      []jobs.FileResult{doneA, loaded(small("b")), doneC, loaded(small("d"))},
		},
		{
			name:      "large files done are skipped and reported",
			files:     []jobs.FileRef{large("big1"), small("b"), large("big2")},
			details:   []jobs.FileResult{doneBig},
			wantLoads: []string{"b", "big2"},
			want:      []jobs.FileResult{doneBig, loaded(small("b")), loaded(large("big2"))},
		},
		{
			name:    "every file done loads nothing",
			files:   []jobs.FileRef{small("a"), small("c")},
			details: []jobs.FileResult{doneC, doneA},
			want:    []jobs.FileResult{doneA, doneC},
		},
		{
			// Details CopyFiles cannot read (another version's) are
			// ignored: loading again is safe, load_history skips what
			// is loaded.
			name:      "unreadable details load every file",
			files:     []jobs.FileRef{small("a"), small("b")},
			details:   "half done",
			wantLoads: []string{"a", "b"},
			want:      []jobs.FileResult{loaded(small("a")), loaded(small("b"))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &fakeRun{name: "s.p"}
			m := metrics.New()
			a := &Activities{eng: &fakeEngine{run: run}, Metrics: m}
			env := newTestEnv(t, a)
			if tt.details != nil {
				env.SetHeartbeatDetails(tt.details)
			}
			v, err := env.ExecuteActivity(a.CopyFiles, jobs.CopyInput{Params: testPipe, Files: tt.files})
			checkErr(t, err, nil)
			var got jobs.CopyResult
			if err := v.Get(&got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Files, tt.want) {
				t.Errorf("result files\n got %+v\nwant %+v", got.Files, tt.want)
			}
			if loads := run.loadedPaths(); !slices.Equal(loads, tt.wantLoads) {
				t.Errorf("loaded %q, want %q", loads, tt.wantLoads)
			}
			// An attempt after this one resumes from its last heartbeat,
			// which holds the files of the earlier attempt too.
			if beats := env.beats.fileBeats(); len(tt.wantLoads) > 0 {
				if len(beats) == 0 {
					t.Fatal("no heartbeat with the files done")
				}
				if last := byPath(beats[len(beats)-1]); !reflect.DeepEqual(last, byPath(tt.want)) {
					t.Errorf("last heartbeat\n got %+v\nwant %+v", last, byPath(tt.want))
				}
			}
			// The earlier attempt counted its own files.
			if n := metric(t, m, filesLoaded); n != float64(len(tt.wantLoads)) {
				t.Errorf("%s = %v, want %d", filesLoaded, n, len(tt.wantLoads))
			}
		})
	}
}

func TestCopyFilesBatches(t *testing.T) {
	many := func(prefix string, n int, size int64) []jobs.FileRef {
		fs := make([]jobs.FileRef, n)
		for i := range fs {
			fs[i] = jobs.FileRef{Path: fmt.Sprintf("%s%05d", prefix, i), Size: size}
		}
		return fs
	}
	perBatch := int(fileread.StageBatchBytes / fileread.StageFileBytes)
	tests := []struct {
		name     string
		parallel int
		files    []jobs.FileRef
		// wantBatches is the size of each LoadBatch, in order.
		wantBatches []int
		wantSingles []string // files loaded by LoadFile, sorted
		wantReaders int      // LoadBatch's par
	}{
		{
			name: "small files in a batch, large ones alone",
			files: []jobs.FileRef{small("s1"), large("l1"), {Path: "edge", Size: fileread.StageFileBytes},
				large("l2"), small("s2")},
			wantBatches: []int{3},
			wantSingles: []string{"l1", "l2"},
			wantReaders: 16,
		},
		{
			name:        "large files only",
			files:       []jobs.FileRef{large("l1"), large("l2"), large("l3")},
			wantSingles: []string{"l1", "l2", "l3"},
		},
		{
			name:        "readers follow Parallel",
			parallel:    2,
			files:       []jobs.FileRef{small("s1")},
			wantBatches: []int{1},
			wantReaders: 8,
		},
		{
			name:        "readers are capped",
			parallel:    20,
			files:       []jobs.FileRef{small("s1")},
			wantBatches: []int{1},
			wantReaders: 32,
		},
		{
			name:        "a batch holds StageBatchFiles files at most",
			files:       many("f", fileread.StageBatchFiles+1, 1),
			wantBatches: []int{fileread.StageBatchFiles, 1},
			wantReaders: 16,
		},
		{
			name:        "a batch holds StageBatchBytes at most",
			files:       many("f", perBatch+1, fileread.StageFileBytes),
			wantBatches: []int{perBatch, 1},
			wantReaders: 16,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &fakeRun{name: "s.p"}
			m := metrics.New()
			fe := &fakeEngine{run: run}
			a := &Activities{eng: fe, Parallel: tt.parallel, Metrics: m}
			env := newTestEnv(t, a)
			v, err := env.ExecuteActivity(a.CopyFiles, jobs.CopyInput{Params: testPipe, Files: tt.files})
			checkErr(t, err, nil)
			var got jobs.CopyResult
			if err := v.Get(&got); err != nil {
				t.Fatal(err)
			}
			// Results come in the order of the files asked for, however
			// they were loaded.
			want := make([]jobs.FileResult, len(tt.files))
			for i, f := range tt.files {
				want[i] = loaded(f)
			}
			if !reflect.DeepEqual(got.Files, want) {
				t.Errorf("result files\n got %+v\nwant %+v", got.Files, want)
			}
			var sizes []int
			for _, b := range run.batches {
				sizes = append(sizes, len(b))
			}
			if !slices.Equal(sizes, tt.wantBatches) {
				t.Errorf("batches of %v files, want %v", sizes, tt.wantBatches)
			}
			for _, par := range run.batchPars {
				if par != tt.wantReaders {
					t.Errorf("LoadBatch par = %d, want %d", par, tt.wantReaders)
				}
			}
			singles := slices.Sorted(slices.Values(run.fileLoads))
			if !slices.Equal(singles, tt.wantSingles) {
				t.Errorf("LoadFile of %q, want %q", singles, tt.wantSingles)
			}
			// A heartbeat after each batch and each large file; the last
			// holds every file.
			beats := env.beats.fileBeats()
			if least := len(tt.wantBatches) + len(tt.wantSingles); len(beats) < least {
				t.Fatalf("%d heartbeats, want at least %d", len(beats), least)
			}
			if last := byPath(beats[len(beats)-1]); !reflect.DeepEqual(last, byPath(want)) {
				t.Errorf("last heartbeat holds %d files, want %d", len(last), len(want))
			}
			if n := metric(t, m, filesLoaded); n != float64(len(tt.files)) {
				t.Errorf("%s = %v, want %d", filesLoaded, n, len(tt.files))
			}
			if n := metric(t, m, series("lakepipe_pipe_file_seconds_count")); n != float64(len(tt.files)) {
				t.Errorf("file_seconds_count = %v, want %d", n, len(tt.files))
			}
			// One job-history row for the turn, with its files and bytes.
			var bytes, rows int64
			for i, f := range tt.files {
				bytes += f.Size
				rows += want[i].Rows
			}
			if len(fe.turns) != 1 {
				t.Fatalf("%d job-history rows, want 1", len(fe.turns))
			}
			if tr := fe.turns[0]; tr.Files != int64(len(tt.files)) || tr.Bytes != bytes || tr.Rows != rows || tr.Status != "SUCCEEDED" || tr.Pipe != "p" || tr.JobID == "" {
				t.Errorf("job history %+v", tr)
			}
		})
	}
}

func TestCopyFilesErrors(t *testing.T) {
	files := []jobs.FileRef{small("s1"), large("l1"), small("s2"), large("l2")}
	long := strings.Repeat("é", errtext.MaxMessage)
	failOn := func(path string, err error) func(jobs.FileRef) (jobs.FileResult, error) {
		return func(f jobs.FileRef) (jobs.FileResult, error) {
			if f.Path == path {
				return jobs.FileResult{}, err
			}
			return loaded(f), nil
		}
	}
	panicOn := func(path string, v any) func(jobs.FileRef) (jobs.FileResult, error) {
		return func(f jobs.FileRef) (jobs.FileResult, error) {
			if f.Path == path {
				panic(v)
			}
			return loaded(f), nil
		}
	}
	batchFails := func(err error) func([]jobs.FileRef) ([]jobs.FileResult, error) {
		return func([]jobs.FileRef) ([]jobs.FileResult, error) { return nil, err }
	}
	tests := []struct {
		name      string
		loadFile  func(jobs.FileRef) (jobs.FileResult, error)
		loadBatch func([]jobs.FileRef) ([]jobs.FileResult, error)
		want      wantErr
		// wantDone is what the last heartbeat holds: what a retry skips.
		wantDone   []string
		wantErrors float64 // lakepipe_pipe_errors_total
	}{
		{
			name:       "a batch's error is retried",
			loadBatch:  batchFails(errors.New("clickhouse: connection reset")),
			want:       wantErr{msg: "clickhouse: connection reset"},
			wantErrors: 1,
		},
		{
			name:       "a batch's permanent error pauses the pipe",
			loadBatch:  batchFails(core.Permanent(errors.New("table s.t does not exist"))),
			want:       wantErr{nonRetryable: true, errType: jobs.ErrTypePipeInvalid, msg: "table s.t does not exist"},
			wantErrors: 1,
		},
		{
			name:       "a long error is capped",
			loadBatch:  batchFails(errors.New(long)),
			want:       wantErr{msg: errtext.Cap(long, errtext.MaxMessage)},
			wantErrors: 1,
		},
		{
			name:       "a long permanent error is capped",
			loadBatch:  batchFails(core.Permanent(errors.New(long))),
			want:       wantErr{nonRetryable: true, errType: jobs.ErrTypePipeInvalid, msg: errtext.Cap(long, errtext.MaxMessage)},
			wantErrors: 1,
		},
		{
			name:       "an application error is returned as it is",
			loadBatch:  batchFails(temporal.NewNonRetryableApplicationError("quota", "Quota", nil)),
			want:       wantErr{nonRetryable: true, errType: "Quota", msg: "quota"},
			wantErrors: 1,
		},
		{
			name: "a panic in a batch fails the attempt",
			loadBatch: func([]jobs.FileRef) ([]jobs.FileResult, error) {
				panic("index out of range")
			},
			want:       wantErr{msg: "pipe s.p: load of a batch of 2 files failed: index out of range"},
			wantErrors: 1,
		},
		{
			name:       "a large file's error fails the attempt after the others",
			loadFile:   failOn("l1", errors.New("s3: slow down")),
			want:       wantErr{msg: "s3: slow down"},
			wantDone:   []string{"l2", "s1", "s2"},
			wantErrors: 1,
		},
		{
			name:       "a large file's permanent error pauses the pipe",
			loadFile:   failOn("l2", core.Permanent(errors.New("access denied"))),
			want:       wantErr{nonRetryable: true, errType: jobs.ErrTypePipeInvalid, msg: "access denied"},
			wantDone:   []string{"l1", "s1", "s2"},
			wantErrors: 1,
		},
		{
			name:       "every large file failing counts each",
			loadFile:   func(jobs.FileRef) (jobs.FileResult, error) { return jobs.FileResult{}, errors.New("timeout") },
			want:       wantErr{msg: "timeout"},
			wantDone:   []string{"s1", "s2"},
			wantErrors: 2,
		},
		{
			name:       "a panic loading a large file fails the attempt",
			loadFile:   panicOn("l1", "nil map"),
			want:       wantErr{msg: "pipe s.p: load of l1 failed: nil map"},
			wantDone:   []string{"l2", "s1", "s2"},
			wantErrors: 1,
		},
		{
			name:       "a panic's value is capped",
			loadFile:   panicOn("l1", errors.New(long)),
			want:       wantErr{msg: "pipe s.p: load of l1 failed: " + errtext.Cap(long, errtext.MaxValue)},
			wantDone:   []string{"l2", "s1", "s2"},
			wantErrors: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &fakeRun{name: "s.p", loadFile: tt.loadFile, loadBatch: tt.loadBatch}
			m := metrics.New()
			a := &Activities{eng: &fakeEngine{run: run}, Metrics: m}
			env := newTestEnv(t, a)
			_, err := env.ExecuteActivity(a.CopyFiles, jobs.CopyInput{Params: testPipe, Files: files})
			checkErr(t, err, &tt.want)
			var done []string
			if beats := env.beats.fileBeats(); len(beats) > 0 {
				for _, r := range beats[len(beats)-1] {
					done = append(done, r.Path)
				}
				slices.Sort(done)
			}
			if !slices.Equal(done, tt.wantDone) {
				t.Errorf("last heartbeat holds %q, want %q", done, tt.wantDone)
			}
			// A batch that fails stops the attempt before the large
			// files start.
			if tt.wantDone == nil && len(run.fileLoads) > 0 {
				t.Errorf("large files loaded after the batch failed: %q", run.fileLoads)
			}
			if n := metric(t, m, series("lakepipe_pipe_errors_total")); n != tt.wantErrors {
				t.Errorf("errors_total = %v, want %v", n, tt.wantErrors)
			}
			if n := metric(t, m, filesLoaded); n != float64(len(tt.wantDone)) {
				t.Errorf("%s = %v, want %d", filesLoaded, n, len(tt.wantDone))
			}
		})
	}
}

// TestOpenPipeErrors: what opening the pipe fails with decides what the
// workflow does: a pipe gone ends it, an error no retry fixes pauses it
// (PipeInvalid), any other is retried.
func TestOpenPipeErrors(t *testing.T) {
	gone := fmt.Errorf("pipe s.p was dropped and created again since this workflow started: %w", core.ErrPipeGone)
	long := strings.Repeat("é", errtext.MaxMessage)
	errs := []struct {
		name string
		err  error
		want wantErr
	}{
		{"pipe gone", gone, wantErr{nonRetryable: true, errType: jobs.ErrTypePipeGone, msg: gone.Error()}},
		{"pipe gone, marked permanent too", core.Permanent(gone), wantErr{nonRetryable: true, errType: jobs.ErrTypePipeGone, msg: gone.Error()}},
		{"permanent", core.Permanent(errors.New("volume v does not exist")),
			wantErr{nonRetryable: true, errType: jobs.ErrTypePipeInvalid, msg: "volume v does not exist"}},
		{"transient", errors.New("dial tcp 127.0.0.1:9000: connection refused"),
			wantErr{msg: "dial tcp 127.0.0.1:9000: connection refused"}},
		{"transient and long", errors.New(long), wantErr{msg: errtext.Cap(long, errtext.MaxMessage)}},
	}
	acts := []struct {
		name string
		run  func(env *testEnv, a *Activities) error
	}{
		{"ListFiles", func(env *testEnv, a *Activities) error {
			_, err := env.ExecuteActivity(a.ListFiles, jobs.ListInput{Params: testPipe})
			return err
		}},
		{"ListNewFiles", func(env *testEnv, a *Activities) error {
			_, err := env.ExecuteLocalActivity(a.ListNewFiles, jobs.ListInput{Params: testPipe})
			return localErr(err)
		}},
		{"CopyFiles", func(env *testEnv, a *Activities) error {
			_, err := env.ExecuteActivity(a.CopyFiles, jobs.CopyInput{Params: testPipe, Files: []jobs.FileRef{small("a"), large("b")}})
			return err
		}},
	}
	for _, act := range acts {
		for _, e := range errs {
			t.Run(act.name+"/"+e.name, func(t *testing.T) {
				eng := &fakeEngine{openErr: e.err}
				a := &Activities{eng: eng}
				err := act.run(newTestEnv(t, a), a)
				checkErr(t, err, &e.want)
				if len(eng.opened) != 1 || eng.opened[0] != testPipe {
					t.Errorf("opened %+v, want %+v once", eng.opened, testPipe)
				}
			})
		}
	}
}

func TestListFiles(t *testing.T) {
	// UTC, without a monotonic reading: as times come back from JSON.
	now := time.Now().UTC()
	files := []jobs.FileRef{
		{Path: "a", Size: 1, Modified: now.Add(-time.Hour)},
		{Path: "b", Size: 2, Modified: now.Add(-2 * time.Hour)},
		{Path: "c", Size: 3, Modified: now.Add(-time.Minute)},
	}
	state := jobs.ListState{Cursor: "x/0001", Ordered: true, FullAt: now.Add(-time.Hour).UTC()}
	next := jobs.ListState{Cursor: "x/0004", Ordered: true, FullAt: now.UTC()}
	hints := []string{"x/0004"}
	tests := []struct {
		name      string
		max       int
		files     []jobs.FileRef
		backlog   int
		listErr   error
		wantLimit int
		want      *wantErr
		// wantBacklog and wantLagAtLeast are the backlog metrics.
		wantBacklog    float64
		wantLagAtLeast float64
	}{
		{
			name: "files and backlog", max: 50, files: files, backlog: 7, wantLimit: 50,
			wantBacklog: 10, wantLagAtLeast: (2 * time.Hour).Seconds(),
		},
		{name: "no MaxFilesPerTurn lists 500", max: 0, wantLimit: 500},
		{name: "a negative MaxFilesPerTurn lists 500", max: -1, wantLimit: 500},
		{name: "nothing new", max: 50, backlog: 0, wantLimit: 50},
		{
			name: "a listing's error is classified", max: 50, wantLimit: 50,
			listErr: core.Permanent(errors.New("connection c does not exist")),
			want:    &wantErr{nonRetryable: true, errType: jobs.ErrTypePipeInvalid, msg: "connection c does not exist"},
		},
		{
			name: "a listing's transient error is retried", max: 50, wantLimit: 50,
			listErr: errors.New("s3: 503"), want: &wantErr{msg: "s3: 503"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &fakeRun{name: "s.p", files: tt.files, backlog: tt.backlog, next: next, listErr: tt.listErr}
			m := metrics.New()
			a := &Activities{eng: &fakeEngine{run: run}, Metrics: m}
			env := newTestEnv(t, a)
			p := testPipe
			p.MaxFilesPerTurn = tt.max
			v, err := env.ExecuteActivity(a.ListFiles, jobs.ListInput{Params: p, Hint: hints, State: state})
			checkErr(t, err, tt.want)
			if len(run.lists) != 1 {
				t.Fatalf("%d listings, want 1", len(run.lists))
			}
			c := run.lists[0]
			if c.limit != tt.wantLimit || !slices.Equal(c.hints, hints) || !reflect.DeepEqual(c.state, state) {
				t.Errorf("ListFiles(%q, %d, %+v), want (%q, %d, %+v)", c.hints, c.limit, c.state, hints, tt.wantLimit, state)
			}
			if tt.want != nil {
				return
			}
			var got jobs.ListResult
			if err := v.Get(&got); err != nil {
				t.Fatal(err)
			}
			want := jobs.ListResult{Files: tt.files, Backlog: tt.backlog, State: next}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("result\n got %+v\nwant %+v", got, want)
			}
			if n := metric(t, m, series("lakepipe_pipe_backlog_files")); n != tt.wantBacklog {
				t.Errorf("backlog_files = %v, want %v", n, tt.wantBacklog)
			}
			// The lag is the age of the oldest file listed; a lower bound
			// is all a test can say without a clock of its own.
			lag := metric(t, m, series("lakepipe_pipe_lag_seconds"))
			if lag < tt.wantLagAtLeast || (tt.wantLagAtLeast == 0 && lag != 0) {
				t.Errorf("lag_seconds = %v, want %v or a little more", lag, tt.wantLagAtLeast)
			}
		})
	}
}

// TestListNewFiles runs ListNewFiles as the workflow does, as a local
// activity.
func TestListNewFiles(t *testing.T) {
	state := jobs.ListState{Cursor: "k/0009", Ordered: true, FullAt: time.Now().Add(-time.Hour).UTC()}
	next := jobs.ListState{Cursor: "k/0010", Ordered: true, FullAt: state.FullAt}
	files := []jobs.FileRef{{Path: "k/0010", Size: 5}}
	tests := []struct {
		name      string
		fullDue   bool
		want      jobs.ListResult
		wantLists int
	}{
		{"full listing due", true, jobs.ListResult{NeedFull: true, State: state}, 0},
		{"incremental listing", false, jobs.ListResult{Files: files, Backlog: 2, State: next}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &fakeRun{name: "s.p", files: files, backlog: 2, next: next, fullDue: tt.fullDue}
			a := &Activities{eng: &fakeEngine{run: run}}
			env := newTestEnv(t, a)
			v, err := env.ExecuteLocalActivity(a.ListNewFiles, jobs.ListInput{Params: testPipe, State: state})
			checkErr(t, localErr(err), nil)
			var got jobs.ListResult
			if err := v.Get(&got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("result\n got %+v\nwant %+v", got, tt.want)
			}
			if len(run.dueAsked) != 1 || !reflect.DeepEqual(run.dueAsked[0], state) {
				t.Errorf("FullListingDue asked with %+v, want %+v once", run.dueAsked, state)
			}
			if len(run.lists) != tt.wantLists {
				t.Errorf("%d listings, want %d", len(run.lists), tt.wantLists)
			}
		})
	}
}

// TestClassifyWrappedApplicationError: Temporal reads only the outermost
// error's type, so an application error wrapped with context must come
// out as an application error of the same type and retry choice, its text
// bounded.
func TestClassifyWrappedApplicationError(t *testing.T) {
	inner := temporal.NewNonRetryableApplicationError("gone", jobs.ErrTypePipeGone, nil)
	long := strings.Repeat("x", 3*errtext.MaxMessage)
	wrapped := fmt.Errorf("open pipe %s: %w", long, inner)
	err := classify(wrapped)
	app, ok := err.(*temporal.ApplicationError)
	if !ok {
		t.Fatalf("classify gave %T, want *temporal.ApplicationError", err)
	}
	if app.Type() != jobs.ErrTypePipeGone || !app.NonRetryable() {
		t.Errorf("type %q, non-retryable %v; want %q, true", app.Type(), app.NonRetryable(), jobs.ErrTypePipeGone)
	}
	if want := errtext.Cap(wrapped.Error(), errtext.MaxMessage); app.Message() != want {
		t.Errorf("message of %d bytes, want the wrapped text capped (%d bytes)", len(app.Message()), len(want))
	}
	if got := classify(inner); got != inner {
		t.Errorf("an application error itself changed: %v", got)
	}
}

// The heartbeats show the copy's progress, and an attempt that makes none
// for StallTimeout gives up with a retryable error instead of holding the
// batch until the start-to-close timeout.
func TestCopyFilesProgressAndStall(t *testing.T) {
	files := []jobs.FileRef{large("l1"), large("l2")}
	run := &fakeRun{name: "s.p"}
	a := &Activities{eng: &fakeEngine{run: run}, Parallel: 1}
	env := newTestEnv(t, a)
	if _, err := env.ExecuteActivity(a.CopyFiles, jobs.CopyInput{Params: testPipe, Files: files}); err != nil {
		t.Fatal(err)
	}
	p, ok := env.beats.progress()
	if want := (jobs.CopyProgress{Files: 2, FilesDone: 2, Bytes: 2 * large("x").Size}); !ok || p != want {
		t.Errorf("last progress %+v (%v), want %+v", p, ok, want)
	}

	stuck := &fakeRun{name: "s.p", stuck: "l2"}
	a = &Activities{eng: &fakeEngine{run: stuck}, Parallel: 1, StallTimeout: 100 * time.Millisecond}
	env = newTestEnv(t, a)
	_, err := env.ExecuteActivity(a.CopyFiles, jobs.CopyInput{Params: testPipe, Files: files})
	checkErr(t, err, &wantErr{msg: "no progress for 100ms (LAKEPIPE_STALL_TIMEOUT): this attempt gives up and is retried"})
	if beats := env.beats.fileBeats(); len(beats) == 0 || len(beats[len(beats)-1]) != 1 {
		t.Errorf("heartbeats %v: want the finished l1 kept for the retry", beats)
	}
}

// TestCopyFilesJobHint: COPY_JOB_HINT's max_file_size refuses larger files
// without loading them (each recorded FAILED), and its parallelism is the
// batch's readers' basis instead of the worker's.
func TestCopyFilesJobHint(t *testing.T) {
	big := jobs.FileRef{Path: "big.csv", Size: 10 << 20, ETag: "e1"}
	small := jobs.FileRef{Path: "small.csv", Size: 100, ETag: "e2"}
	run := &fakeRun{name: "s.p", hint: loading.CopyJobHint{Parallelism: 2, MaxFileSize: 1 << 20}}
	a := &Activities{eng: &fakeEngine{run: run}, Parallel: 4, Metrics: metrics.New()}
	env := newTestEnv(t, a)
	v, err := env.ExecuteActivity(a.CopyFiles, jobs.CopyInput{Params: testPipe, Files: []jobs.FileRef{big, small}})
	checkErr(t, err, nil)
	var got jobs.CopyResult
	if err := v.Get(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Files) != 2 || got.Files[0].Status != jobs.FileFailed || got.Files[1].Status != jobs.FileLoaded {
		t.Fatalf("results %+v: want big.csv FAILED (over max_file_size) and small.csv LOADED", got.Files)
	}
	if !slices.Equal(run.rejected, []string{"big.csv"}) || len(run.fileLoads) != 0 {
		t.Fatalf("refused %v and read %v: want big.csv refused, not read", run.rejected, run.fileLoads)
	}
	if !slices.Equal(run.batchPars, []int{smallFileReaders(2)}) {
		t.Fatalf("LoadBatch readers %v, want %d (from parallelism 2)", run.batchPars, smallFileReaders(2))
	}
}
