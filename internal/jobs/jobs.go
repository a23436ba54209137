// Package jobs holds what the workflows and their activities exchange:
// parameters, inputs and results, the names of workflows, activities,
// signals and queries, and the states and kinds that activities report
// and workflows act on, each defined once. The workflows, the activities,
// the engine and the orchestrator all import it, so that nothing below the
// workflows has to import them.
//
// Values here travel in Temporal histories (JSON), so a field's name or a
// state's string never changes once released: running workflows and the
// replay tests' recorded histories depend on them. It must not import
// anything of lakepipe's.
package jobs

import "time"

// DynamicTableWorkflowName is the registered name of the dynamic-table
// workflow; its id is dt.<workspace>.<schema>.<name>.
const DynamicTableWorkflowName = "DynamicTableWorkflow"

// Signals of the dynamic-table workflow besides refresh, resume and drop.
const (
	SignalSuspend   = "suspend"   // ALTER DYNAMIC TABLE d SUSPEND
	SignalRefreshed = "refreshed" // REFRESH DYNAMIC TABLE ran: restart the interval from now
	// SignalRefreshFor asks a dynamic table's workflow for one refresh of
	// the table on behalf of a downstream table's chain (RefreshRequest);
	// the answer comes back as SignalRefreshDone (RefreshReply).
	SignalRefreshFor  = "refresh-for"
	SignalRefreshDone = "refresh-done"
)

// DynamicTableWorkflowID is a dynamic table's workflow id.
func DynamicTableWorkflowID(p DynamicTableParams) string {
	return "dt." + p.Workspace + "." + p.Schema + "." + p.Name
}

// RefreshRequest asks a dynamic table's workflow for one refresh of its
// table alone, for the chain of the workflow ReplyTo.
type RefreshRequest struct {
	ID      string // unique to the requesting run; the reply carries it
	ReplyTo string // workflow id of the requesting dynamic table
	Trigger string // CHAIN
}

// RefreshReply answers a RefreshRequest: the refresh's result, or Error
// when it could not run (the activity failed, the table is gone).
type RefreshReply struct {
	ID     string
	Result RefreshResult
	Error  string `json:",omitempty"`
}

// ActivityRefreshDynamicTable refreshes one dynamic table.
const ActivityRefreshDynamicTable = "RefreshDynamicTable"

// DynamicTableParams identify a dynamic table and its interval.
type DynamicTableParams struct {
	Workspace       string
	Schema          string
	Name            string
	IntervalSeconds int
}

// DynamicTableCounters are the workflow's running totals.
type DynamicTableCounters struct {
	Refreshes     int64
	Failures      int64
	LastRefresh   time.Time
	LastError     string
	ContinuedRuns int64
}

// DynamicTableInput starts (or continues) a dynamic-table workflow.
type DynamicTableInput struct {
	Params    DynamicTableParams
	Suspended bool
	Counters  DynamicTableCounters
	// RefreshNow carries a REFRESH signal that arrived during the last
	// refresh of the run that continued as new.
	RefreshNow bool `json:",omitempty"`
}

// DynamicTableStatus answers the status query.
type DynamicTableStatus struct {
	Params     DynamicTableParams
	Suspended  bool
	Refreshing bool
	NextAt     time.Time
	Counters   DynamicTableCounters
}

// RefreshInput asks for one refresh.
type RefreshInput struct {
	Params  DynamicTableParams
	Trigger string // SCHEDULED, MANUAL
}

// RefreshResult is the outcome of one refresh.
type RefreshResult struct {
	State RefreshState
	Mode  RefreshMode
	Rows  int64
	Error string
}

// ErrTypeDynamicTableGone marks a refresh of a dropped dynamic table.
const ErrTypeDynamicTableGone = "DynamicTableGone"

// PipeKind says what a pipe reads: a volume's files or a Kafka topic. It
// is stored in the catalog and shown by SHOW PIPES (pipe_kind).
type PipeKind string

// Pipe kinds.
const (
	KindVolume PipeKind = "VOLUME"
	KindKafka  PipeKind = "KAFKA"
)

// Activity names of Kafka pipes.
const (
	ActivityKafkaOffsets = "KafkaOffsets"
	ActivityKafkaBatch   = "KafkaBatch"
	// ActivityKafkaEnd reads the ends of the topic's partitions, as a
	// local activity before a batch: the batch's end offsets are then in
	// the history, the same for every attempt of it.
	ActivityKafkaEnd = "KafkaEnd"
	// ActivityAwaitRecords is how an idle Kafka pipe waits for records:
	// one activity on the await queue (AwaitQueue) that reads the topic's
	// end offsets every batch interval and returns once records wait
	// beyond the pipe's offsets (or after For), so an idle interval adds
	// nothing to the pipe's history. AwaitFiles' counterpart.
	ActivityAwaitRecords = "AwaitRecords"
)

// AwaitRecordsInput asks AwaitRecords to read the topic's end offsets
// every interval until records wait beyond Offsets. For and Since are
// AwaitInput's.
type AwaitRecordsInput struct {
	Params  PipeParams
	Offsets []PartitionOffset
	For     time.Duration
	Since   time.Time `json:",omitzero"`
}

// AwaitRecordsResult is the end offsets that showed records (End empty:
// For passed, or the worker is stopping), and the reads made. The pipe's
// next batch stops at End.
type AwaitRecordsResult struct {
	End   []PartitionOffset `json:",omitempty"`
	Polls int
}

// CaughtUp reports whether no partition of end holds records beyond
// offsets. A partition offsets does not know yet (added to the topic) is
// for a batch to take in, empty or not.
func CaughtUp(offsets, end []PartitionOffset) bool {
	if len(end) == 0 {
		return false
	}
	at := make(map[int32]int64, len(offsets))
	for _, o := range offsets {
		at[o.Partition] = o.Offset
	}
	for _, e := range end {
		if o, ok := at[e.Partition]; !ok || e.Offset > o {
			return false
		}
	}
	return true
}

// PartitionOffset is the offset of the next record to load from one
// partition.
type PartitionOffset struct {
	Partition int32
	Offset    int64
}

// KafkaState is a Kafka pipe's position, kept in the workflow (and carried
// through continue-as-new): the offsets up to which records are loaded.
// Temporal recording a batch's result is the commit point of that batch.
type KafkaState struct {
	Offsets []PartitionOffset // sorted by partition; empty before the first turn
	// Lag is how many records waited beyond the offsets at the last turn.
	Lag int64
	// InvalidReason says why the pipe paused itself (too many bad records);
	// resume clears it.
	InvalidReason string
	// Unfinished is set when a batch activity failed for good: the next
	// batch from the same offsets must look for rows it left.
	Unfinished bool `json:",omitempty"`
	// End is where the batch in progress stops, fixed before its first
	// attempt and kept until it succeeds: every attempt of a batch (and
	// the batch after one that failed for good) loads the same records
	// under its commit id, so the table, the change log and what streams
	// and dynamic tables read of that commit agree.
	End []PartitionOffset `json:",omitempty"`
	// ResetTo is a RESET_KAFKA_GROUP_OFFSETS not applied yet: the pipe
	// moves its offsets there before its next batch.
	ResetTo string `json:",omitempty"`
	// Epoch counts the RESET_KAFKA_GROUP_OFFSETS the pipe has applied
	// (since the "kafka-reset-epoch" version). A batch's commit id names
	// it beside the offsets the batch starts from: records loaded again
	// after a move back are new loads, not the commit of the batch that
	// started there before (which the change log knows, and a retry would
	// remove).
	Epoch int64 `json:",omitempty"`
}

// KafkaOffsetsInput asks where a new Kafka pipe starts, or, with Reset,
// where RESET_KAFKA_GROUP_OFFSETS moves it ('earliest', 'latest' or epoch
// milliseconds).
type KafkaOffsetsInput struct {
	Params PipeParams
	Reset  string `json:",omitempty"`
}

// KafkaOffsetsResult is where it starts.
type KafkaOffsetsResult struct {
	Offsets []PartitionOffset
}

// KafkaBatchInput asks to load the records after Offsets.
type KafkaBatchInput struct {
	Params  PipeParams
	Offsets []PartitionOffset
	// Rejected is how many bad records the pipe has tolerated so far: the
	// batch may reject max_errors minus that many before the pipe pauses.
	Rejected int64
	// Retry says an earlier activity for these offsets failed: rows it may
	// have left are removed first (retried attempts always do this).
	Retry bool `json:",omitempty"`
	// End, when set, is where the batch stops (partitions not in it load
	// nothing); without it the batch reads the ends when it starts
	// (histories recorded before the "kafka-fixed-end" version).
	End []PartitionOffset `json:",omitempty"`
	// Epoch is the pipe's KafkaState.Epoch: part of the batch's commit id.
	Epoch int64 `json:",omitempty"`
}

// KafkaBatchResult is what one batch did.
type KafkaBatchResult struct {
	Offsets  []PartitionOffset // the new position (unchanged when Paused)
	Records  int64             // records read
	Rows     int64             // rows inserted
	Filtered int64             // records WHERE left out
	Rejected int64             // bad records skipped
	// DeadLettered counts the bad records written to the pipe's
	// dead-letter table (not counted in Rejected).
	DeadLettered int64 `json:",omitempty"`
	// FirstError names the topic, partition and offset of the first bad
	// record of the batch and what was wrong with it.
	FirstError string
	Lag        int64 // records beyond the new offsets when the batch began
	More       bool  // the batch stopped at max.poll.records: go on at once
	// NextEnd, when More, are the topic's end offsets read as the batch
	// ended: the next batch's End, which then needs no KafkaEnd. Empty
	// when that read failed (the next turn reads them) and before
	// 2026-12-06.
	NextEnd []PartitionOffset `json:",omitempty"`
	// Paused is set when the batch had more bad records than max_errors
	// allows, or a record batch over LAKEPIPE_MAX_KAFKA_BATCH_BYTES:
	// nothing of it was loaded and the pipe pauses with Reason.
	Paused bool
	Reason string
	// Read says how the batch's read began (kafka.Client.Began): "new",
	// "continued" or "reassigned".
	Read string `json:",omitempty"`
}

// TaskQueue is where lakepipe's workers listen.
const TaskQueue = "lakepipe"

// Signal and query names of the pipe workflow. They can be sent from the
// Temporal CLI too, e.g.
//
//	temporal workflow signal --workflow-id pipe.default.public.sales_pipe --name pause
const (
	SignalPause   = "pause"   // ALTER PIPE p SET PIPE_EXECUTION_PAUSED = TRUE
	SignalResume  = "resume"  // ALTER PIPE p SET PIPE_EXECUTION_PAUSED = FALSE
	SignalRefresh = "refresh" // ALTER PIPE p REFRESH / EXECUTE: run a turn now
	SignalFiles   = "files"   // event notifications: new object keys (FilesSignal)
	SignalDrop    = "drop"    // DROP PIPE: finish the current turn and end
	QueryStatus   = "status"
)

// Registered names of the pipe workflows: one type per kind of pipe
// (volume, Kafka), and PipeWorkflow, the type of both in earlier releases,
// which their runs keep.
const (
	VolumePipeWorkflowName = "VolumePipeWorkflow"
	KafkaPipeWorkflowName  = "KafkaPipeWorkflow"
	PipeWorkflowName       = "PipeWorkflow"
)

// PipeWorkflowFor is the workflow type a new pipe of kind k starts as.
func PipeWorkflowFor(k PipeKind) string {
	if k == KindKafka {
		return KafkaPipeWorkflowName
	}
	return VolumePipeWorkflowName
}

// PipeParams identify a pipe and its schedule. The COPY statement itself
// is read from the catalog by the activities, so histories hold no SQL and
// no secrets.
type PipeParams struct {
	Workspace  string
	Schema     string
	Name       string
	Kind       PipeKind
	IngestMode string // LIST_PURGE, LIST, EVENT_NOTIFICATION
	// PollSeconds is the timer between turns (30 s by default, as the
	// ClickZetta Lakehouse service; POLL_INTERVAL_IN_SECONDS lowers it).
	PollSeconds int
	// MaxFilesPerTurn bounds one CopyFiles activity.
	MaxFilesPerTurn int
	// Generation is the pipe's creation time (Unix nanoseconds). An
	// activity of a pipe that was dropped and created again under the same
	// name finds another generation in the catalog and stops, instead of
	// working for the new pipe. 0 in workflows started before it existed.
	Generation int64 `json:",omitempty"`
	// InitialDelaySeconds holds a new pipe's first turn back
	// (INITIAL_DELAY_IN_SECONDS); 0 runs it at once.
	InitialDelaySeconds int `json:",omitempty"`
}

// PipeCounters are the pipe's running totals.
type PipeCounters struct {
	FilesLoaded   int64
	FilesFailed   int64
	RowsLoaded    int64
	RowsRejected  int64
	Turns         int64
	LastLoadTime  time.Time
	LastTurnTime  time.Time
	LastError     string
	Backlog       int
	ContinuedRuns int64
}

// PipeInput starts (or continues) a pipe workflow.
type PipeInput struct {
	Params   PipeParams
	Paused   bool
	Counters PipeCounters
	// Kafka is the position of a Kafka pipe (nil for volume pipes).
	Kafka *KafkaState `json:",omitempty"`
	// InvalidReason says why a volume pipe paused itself: an error no
	// retry fixes (its table, volume or connection gone, credentials
	// refused). Resume clears it. Kafka pipes keep theirs in Kafka.
	InvalidReason string `json:",omitempty"`
	// List is where the pipe's listing resumes (volume pipes).
	List ListState
}

// ListState is where a volume pipe's listing resumes. When the keys of new
// files sort after those already handled (time-stamped or numbered names,
// as most writers make), a turn lists only the keys after Cursor (S3's
// StartAfter), in proportion to what is new; a full listing now and then
// (engine.Config.FullListingInterval) checks the order still holds and
// finds files that broke it. Databricks Auto Loader's incremental listing
// works the same way.
type ListState struct {
	// Cursor: every key up to it, in key order, is handled ("": list
	// from the first key).
	Cursor string `json:",omitempty"`
	// Ordered: the last full listing found every file not yet handled
	// after every handled one, so turns may list from Cursor.
	Ordered bool `json:",omitempty"`
	// FullAt is when the last full listing ran.
	FullAt time.Time
}

// PipeStatus is what the status query answers.
type PipeStatus struct {
	Params   PipeParams
	Paused   bool
	Running  bool // a turn is in progress
	Counters PipeCounters
	Kafka    *KafkaState `json:",omitempty"`
	// InvalidReason: see PipeInput.
	InvalidReason string `json:",omitempty"`
	// List is where the next listing resumes (volume pipes).
	List ListState
}

// FilesSignal carries object paths (relative to the volume) that an event
// notification reported.
type FilesSignal struct {
	Paths []string
}

// ListInput asks for the files a pipe has not loaded yet.
type ListInput struct {
	Params PipeParams
	Hint   []string  // paths from event notifications, checked first
	State  ListState // where the listing resumes
}

// FileRef is one file to load.
type FileRef struct {
	Path     string
	Size     int64
	ETag     string
	Modified time.Time
}

// ListResult is the answer of ListFiles.
type ListResult struct {
	Files []FileRef
	// Backlog counts files waiting beyond this batch; a listing that
	// stopped once it had a batch knows of at least this many.
	Backlog int
	State   ListState // where the next turn's listing resumes
	// CursorAfter is State.Cursor once Files are handled (loaded, failed
	// or purged): the workflow moves the cursor there after the copy
	// succeeds, so that the next listing does not list this batch again.
	// "": State.Cursor stays.
	CursorAfter string `json:",omitempty"`
	// NeedFull: ListNewFiles did not list, a full listing is due.
	NeedFull bool `json:",omitempty"`
}

// CopyInput asks to load files.
type CopyInput struct {
	Params PipeParams
	Files  []FileRef
}

// FileResult is the outcome of one file.
type FileResult struct {
	Path       string
	Status     FileStatus
	Rows       int64
	Rejected   int64
	FirstError string
}

// CopyResult is the answer of CopyFiles.
type CopyResult struct {
	Files []FileResult
}

// ErrTypePipeGone is the application error type of activities whose pipe
// was dropped; the workflow ends when it sees it.
const ErrTypePipeGone = "PipeGone"

// ErrTypePipeInvalid is the application error type of activities that met
// an error no retry fixes (the COPY's table, volume or connection gone,
// credentials refused): the pipe pauses with the message as its
// invalid_reason, and resuming it after the fix goes on.
const ErrTypePipeInvalid = "PipeInvalid"

// Activity names, registered by the worker.
const (
	ActivityListFiles = "ListFiles"
	ActivityCopyFiles = "CopyFiles"
	// ActivityListNewFiles is ListFiles run as a local activity, for the
	// turns of a pipe whose listing is incremental: it answers NeedFull
	// when a full listing is due, which then runs as ListFiles.
	ActivityListNewFiles = "ListNewFiles"
	// ActivityAwaitFiles is how an idle polling pipe waits for files: one
	// activity that lists every poll interval and returns once files
	// wait (or after AwaitInput.For), so an idle poll adds nothing to the
	// pipe's history. It runs on the await queue (AwaitQueue).
	ActivityAwaitFiles = "AwaitFiles"
)

// AwaitInput asks AwaitFiles to list a pipe's volume every poll interval
// until files wait.
type AwaitInput struct {
	Params PipeParams
	State  ListState // where the listings resume
	// For is how long it waits at most; it then returns no files and its
	// state, and the workflow starts another (a few history events per
	// For, however short the poll interval).
	For time.Duration
	// Since is when the turn before the wait began (its listing): the
	// first listing is due one poll interval after it, at once if that has
	// passed, so that a pipe lists every interval however long its turns
	// take. Zero (workflows recorded before 2026-12-06, and the waits
	// after the first): one interval after the wait starts.
	Since time.Time `json:",omitzero"`
}

// AwaitResult is the listing that found files (Files empty: For passed,
// or the worker is stopping), and the listings made.
type AwaitResult struct {
	ListResult
	Polls int
}

// AwaitProgress is the heartbeat detail of AwaitFiles and AwaitRecords
// (List empty), shown by the Temporal UI's pending-activity view.
type AwaitProgress struct {
	Polls       int
	LastListing time.Time
	NextListing time.Time
	// List is where the wait's listings resume, newer than the
	// workflow's until the wait returns.
	List ListState
}

// RefreshChainWorkflowName is the registered name of the refresh-chain
// workflow: one refresh of a dynamic table after its upstream dynamic
// tables, each of those a child run of this workflow.
const RefreshChainWorkflowName = "DynamicTableRefreshChain"

// ActivityPlanRefresh lists a dynamic table's upstream dynamic tables.
const ActivityPlanRefresh = "PlanRefresh"

// PlanInput asks for a dynamic table's upstream.
type PlanInput struct {
	Params DynamicTableParams
}

// PlanResult is the upstream dynamic tables of a dynamic table, every one
// after those it reads (dependency order); the table itself is not in it.
type PlanResult struct {
	Upstream []DynamicTableParams
}

// RefreshChainInput asks for a refresh; with Alone set, of the table only
// (the chain's children).
type RefreshChainInput struct {
	Params  DynamicTableParams
	Trigger string
	Alone   bool
}

// RefreshChainResult is every refresh the chain ran, upstream first.
type RefreshChainResult struct {
	Refreshes []ChainStep
}

// ChainStep is one refresh of a chain.
type ChainStep struct {
	Name   string
	Result RefreshResult
}

// ActivityWaitRefresh waits for the refresh of a dynamic table that is
// running under its RefreshWorkflowID and returns that refresh's result.
// Only runs of the dynamic-table workflow from before its "refresh-owned"
// version use it (and RefreshChainWorkflowName, RefreshWorkflowID); it
// stays registered while such runs may exist.
const ActivityWaitRefresh = "WaitRefresh"

// WaitRefreshInput names the refresh run to wait for.
type WaitRefreshInput struct {
	WorkflowID string
}

// RefreshWorkflowID is the workflow id every refresh of a dynamic table
// ran under from the "refresh-serial" version to "refresh-owned": manual,
// scheduled and chained alike. Temporal runs one workflow per id at a time, so refreshes
// of one table never overlap; overlapping ones would count new rows twice.
func RefreshWorkflowID(p DynamicTableParams) string {
	return "dt." + p.Workspace + "." + p.Schema + "." + p.Name + ".refresh"
}

// FileStatus is what became of one file, as load_history shows it.
type FileStatus string

const (
	FileLoaded          FileStatus = "LOADED"
	FilePartiallyLoaded FileStatus = "PARTIALLY_LOADED"
	FileFailed          FileStatus = "FAILED"
	// FileSkipped: the file was not loaded this turn and is not recorded
	// (gone since the listing, or loaded already).
	FileSkipped FileStatus = "SKIPPED"
)

// Loaded reports whether the file's rows are in the table.
func (s FileStatus) Loaded() bool { return s == FileLoaded || s == FilePartiallyLoaded }

// RefreshState is how a dynamic table's refresh ended, as SHOW DYNAMIC
// TABLE REFRESH HISTORY shows it.
type RefreshState string

const (
	RefreshSucceeded RefreshState = "SUCCEED"
	RefreshFailed    RefreshState = "FAILED"
)

// RefreshMode is how a refresh computed the dynamic table.
type RefreshMode string

const (
	RefreshIncremental RefreshMode = "INCREMENTAL"
	RefreshFull        RefreshMode = "FULL"
)
