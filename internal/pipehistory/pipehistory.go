// Package pipehistory keeps a pipe's job history: one row per turn that
// loaded or tried to load (a copy of files, a Kafka batch), written by the
// turn's activity, and the pipe_history('p') table function that reads it
// — the job history the ClickZetta Lakehouse documentation filters by a
// pipe's query_tag (pipe.workspace.schema.name). Idle turns, which found
// nothing to load, write nothing: the history costs what the pipe loads.
// Maintenance expires rows older than LoadHistoryDays.
package pipehistory

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/schemas"
)

// Turn is one row of a pipe's job history.
type Turn struct {
	QueryTag string // the pipe's workflow id
	Schema   string
	Pipe     string
	RunID    string // the workflow run
	JobID    string // the activity within the run: a retried attempt replaces the row
	Kind     jobs.PipeKind
	Start    time.Time
	End      time.Time
	Status   string // SUCCEEDED, FAILED
	Files    int64
	Failed   int64 // files FAILED
	Rows     int64
	Rejected int64
	Bytes    int64
	// Offsets of a Kafka batch, "partition:offset" comma-separated.
	OffsetsBefore, OffsetsAfter string
	Error                       string
}

// Statuses of a turn.
const (
	Succeeded = "SUCCEEDED"
	Failed    = "FAILED"
)

var columns = []string{"query_tag", "schema", "pipe_name", "run_id", "job_id", "kind", "start_time", "end_time", "status",
	"files", "files_failed", "rows_loaded", "rows_rejected", "bytes", "offsets_before", "offsets_after", "error", "version"}

// Record writes a turn; a later record of the same job replaces it.
func Record(ctx context.Context, st *chstore.Store, t Turn) error {
	row := []any{t.QueryTag, t.Schema, t.Pipe, t.RunID, t.JobID, string(t.Kind), t.Start.UTC(), t.End.UTC(), t.Status,
		uint64(t.Files), uint64(t.Failed), uint64(t.Rows), uint64(t.Rejected), uint64(t.Bytes), t.OffsetsBefore, t.OffsetsAfter,
		t.Error, uint64(time.Now().UnixNano())}
	if err := st.InsertRows(ctx, schemas.SystemDB, "pipe_history", columns, [][]any{row}); err != nil {
		return fmt.Errorf("record the job history of pipe %s: %w", t.Pipe, err)
	}
	return nil
}

// Offsets renders a Kafka position for the history.
func Offsets(o []jobs.PartitionOffset) string {
	parts := make([]string, len(o))
	for i, p := range o {
		parts[i] = strconv.Itoa(int(p.Partition)) + ":" + strconv.FormatInt(p.Offset, 10)
	}
	return strings.Join(parts, ",")
}

// Source renders pipe_history('p') — or pipe_history() for every pipe of
// the schema — as a subquery, newest turn first.
func Source(ctx context.Context, c *core.Core, f *sqlast.FuncCall) (string, error) {
	where := "schema = " + chsql.QuoteString(c.Cfg.Schema)
	switch len(f.Args) {
	case 0:
	case 1:
		lit, ok := f.Args[0].(*sqlast.Literal)
		if !ok || lit.Kind != sqlast.LitString {
			return "", fmt.Errorf("pipe_history takes the pipe's name as a string, as in pipe_history('sales_pipe')")
		}
		spec, err := c.PipeSpec(ctx, lit.Value)
		if err != nil {
			return "", err
		}
		// Turns of an earlier pipe of the same name are not this pipe's.
		where += " AND pipe_name = " + chsql.QuoteString(lit.Value) + fmt.Sprintf(" AND start_time >= toDateTime(%d)", spec.CreatedAt.Unix())
	default:
		return "", fmt.Errorf("pipe_history takes one pipe name, as in pipe_history('sales_pipe'), or none for every pipe of the schema")
	}
	// FINAL: the newest record of a job (its last attempt).
	return "(SELECT query_tag, pipe_name, run_id, job_id, kind, start_time, end_time, status, files, files_failed, " +
		"rows_loaded, rows_rejected, bytes, offsets_before, offsets_after, error FROM lakepipe.pipe_history FINAL WHERE " + where +
		" ORDER BY start_time DESC, job_id DESC)", nil
}
