package jobs

import (
	"time"

	"go.temporal.io/sdk/temporal"
)

// Updates of the pipe and dynamic-table workflows. ALTER PIPE and ALTER
// DYNAMIC TABLE send them and wait for the reply; each has a validator that
// refuses a request that cannot apply, with the reason. They carry the
// names of the signals that do the same thing without a reply, which stay
// for the Temporal CLI:
//
//	temporal workflow update execute --workflow-id pipe.default.public.p --name pause
//	temporal workflow signal --workflow-id pipe.default.public.p --name pause
const (
	UpdatePause   = SignalPause   // pipe: no new turn starts
	UpdateResume  = SignalResume  // pipe or dynamic table: run again
	UpdateRefresh = SignalRefresh // pipe: a turn now; dynamic table: one refresh (its chain), replied with its RefreshChainResult
	UpdateSuspend = SignalSuspend // dynamic table: no scheduled refresh
	// UpdateSet changes a pipe's settings (ALTER PIPE … SET), from its
	// next turn; the signal of the same name carries the same PipeSettings.
	UpdateSet = "set"
	SignalSet = UpdateSet
)

// PipeSettings are the settings of a running pipe's workflow that ALTER
// PIPE … SET changes; zero leaves one as it is.
type PipeSettings struct {
	PollSeconds     int `json:",omitempty"`
	MaxFilesPerTurn int `json:",omitempty"`
	// ResetOffsets moves a Kafka pipe before its next batch:
	// 'earliest', 'latest' or epoch milliseconds (RESET_KAFKA_GROUP_OFFSETS).
	ResetOffsets string `json:",omitempty"`
}

// Status is what a pipe or dynamic table is doing, as its workflow keeps
// it in the LakepipeStatus search attribute and replies to an update.
type Status string

// Statuses.
const (
	StatusRunning   Status = "RUNNING"
	StatusPaused    Status = "PAUSED"    // a pipe (SHOW PIPES shows SUSPENDED, as the ClickZetta Lakehouse documentation does)
	StatusSuspended Status = "SUSPENDED" // a dynamic table
	StatusFailed    Status = "FAILED"    // the workflow ended without DROP (SHOW reads it from the execution status)
)

// ControlReply answers an update: the state the workflow took.
type ControlReply struct {
	Status Status
	// Detail says what happens next, e.g. that the turn in progress
	// finishes first.
	Detail string `json:",omitempty"`
}

// Kind of workflow, in the LakepipeKind search attribute.
const (
	VisibleVolumePipe   = "VOLUME_PIPE"
	VisibleKafkaPipe    = "KAFKA_PIPE"
	VisibleDynamicTable = "DYNAMIC_TABLE"
)

// Search attributes of lakepipe's workflows, so that the Temporal UI and
// CLI filter them and SHOW PIPES and SHOW DYNAMIC TABLES answer from one
// visibility list, with no worker running:
//
//	temporal workflow list --query 'LakepipeKind="KAFKA_PIPE" AND LakepipeStatus="PAUSED"'
//
// They must be registered in the namespace (the local stack does it;
// docs/operations.md says how for a production namespace). A workflow
// started without them (a namespace where they are not registered) never
// upserts them.
var (
	AttrKind      = temporal.NewSearchAttributeKeyKeyword("LakepipeKind")
	AttrWorkspace = temporal.NewSearchAttributeKeyKeyword("LakepipeWorkspace")
	AttrSchema    = temporal.NewSearchAttributeKeyKeyword("LakepipeSchema")
	AttrTable     = temporal.NewSearchAttributeKeyKeyword("LakepipeTable") // the target table; a dynamic table's own name
	AttrStatus    = temporal.NewSearchAttributeKeyKeyword("LakepipeStatus")
)

// SearchAttributeNames are the names of the search attributes above, all
// of type Keyword.
var SearchAttributeNames = []string{"LakepipeKind", "LakepipeWorkspace", "LakepipeSchema", "LakepipeTable", "LakepipeStatus"}

// Visibility is what a workflow is started with for the Temporal UI and
// SHOW: its search attributes and a memo.
type Visibility struct {
	Kind      string // VisibleVolumePipe, VisibleKafkaPipe, VisibleDynamicTable
	Workspace string
	Schema    string
	Table     string
	Status    Status
	// Statement is the redacted CREATE statement, kept in the memo
	// (memo key "statement").
	Statement string
}

// MemoStatement and MemoFigures are the memo keys: the redacted statement,
// and the figures SHOW prints (PipeFigures, upserted by the pipe workflow
// after a turn that changed them; DynamicTableFigures, after a refresh).
const (
	MemoStatement = "statement"
	MemoFigures   = "figures"
)

// PipeFigures are a pipe's running figures as its memo keeps them. Only
// turns that change them upsert them: an idle turn writes nothing.
type PipeFigures struct {
	FilesLoaded  int64     `json:"files_loaded"`
	RowsLoaded   int64     `json:"rows_loaded"`
	FilesFailed  int64     `json:"files_failed,omitempty"`
	LastLoadTime time.Time `json:"last_load_time,omitzero"`
	Backlog      int       `json:"backlog,omitempty"` // files beyond the last batch, or Kafka records beyond the offsets
}

// DynamicTableFigures are a dynamic table's figures as its memo keeps
// them, upserted after each scheduled refresh.
type DynamicTableFigures struct {
	LastRefresh time.Time `json:"last_refresh,omitzero"`
	Refreshes   int64     `json:"refreshes"`
	Failures    int64     `json:"failures,omitempty"`
}

// Listed is one workflow of a visibility list.
type Listed struct {
	ID        string
	Kind      string
	Schema    string
	Table     string
	Status    Status               // the search attribute; StatusFailed when the execution ended
	Figures   *PipeFigures         // a pipe's
	Refreshed *DynamicTableFigures // a dynamic table's
	// Ended is the execution status of a workflow that is not running
	// (COMPLETED, FAILED, TERMINATED, …); empty while it runs.
	Ended string
}

// Maintenance: one Temporal Schedule per task queue starts
// MaintenanceWorkflow every hour (skipped while a run is still going),
// whose Maintain activity expires old load and refresh history, trims
// change logs, empties the trash of dropped tables and ends idle
// streaming-write sessions. It replaces a ticker in every worker, and
// shows in the Temporal UI (Schedules) with its runs.
const (
	MaintenanceWorkflowName = "MaintenanceWorkflow"
	ActivityMaintain        = "Maintain"
	MaintenanceEvery        = time.Hour
)

// MaintenanceScheduleID is the id of the maintenance Schedule of a task
// queue: lakepipe-maintenance for the default queue.
func MaintenanceScheduleID(queue string) string {
	if queue == "" || queue == TaskQueue {
		return "lakepipe-maintenance"
	}
	return "lakepipe-maintenance-" + queue
}

// LoadQueue is the task queue of the load activities (CopyFiles,
// KafkaBatch, RefreshDynamicTable) of workflows running on queue control:
// a flood of loads waits there without holding up the workflow tasks,
// listings and other short control activities of the control queue. A
// worker serves both by default (lakepipe worker --queues).
func LoadQueue(control string) string {
	if control == "" {
		control = TaskQueue
	}
	return control + "-loads"
}

// AwaitQueue is the task queue of AwaitFiles, next to a control queue:
// each idle polling pipe holds one of its slots for as long as it waits,
// so it has slots of its own (many, each a sleeping goroutine) and its
// waits never take the slots of the control queue's short activities.
// The workers that serve the control queue serve it too.
func AwaitQueue(control string) string {
	if control == "" {
		control = TaskQueue
	}
	return control + "-await"
}

// CopyProgress is the second detail of a CopyFiles heartbeat, for the
// Temporal UI's pending-activity view: files of the batch and finished,
// bytes listed and read so far.
type CopyProgress struct {
	Files     int
	FilesDone int
	Bytes     int64
	BytesRead int64
}

// KafkaProgress is the detail of a KafkaBatch heartbeat: records read so
// far, from the batch's start offsets towards its end offsets.
type KafkaProgress struct {
	Records int64
	From    []PartitionOffset
	End     []PartitionOffset `json:",omitempty"`
}
