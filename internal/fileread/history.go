package fileread

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/schemas"
)

// RecordLoads writes load history rows for a table (pipe "" for one-shot
// COPY). A later record of the same file replaces the earlier one.
func (e *Reader) RecordLoads(ctx context.Context, table, pipe, loadID string, loads []FileLoad) error {
	rows := make([][]any, len(loads))
	now := time.Now().UTC()
	for i, l := range loads {
		rows[i] = []any{table, pipe, l.Path, l.ETag, uint64(l.Size), now, string(l.Status), l.FirstError, l.FirstErrLine,
			uint64(l.Rows), uint64(l.Rejected), cmp.Or(l.LoadID, loadID), uint64(now.UnixNano()) + uint64(i)}
	}
	err := e.St.InsertRows(ctx, schemas.SystemDB, "load_history", []string{"table_name", "pipe_name", "file_path", "etag", "file_size",
		"last_copy_time", "status", "first_error_message", "first_error_line", "rows_loaded", "rows_rejected", "load_id", "version"}, rows)
	if err != nil {
		return fmt.Errorf("record load history of %s: %w", table, err)
	}
	return nil
}

// LoadHistorySource renders load_history('t') as a subquery.
func (e *Reader) LoadHistorySource(ctx context.Context, f *sqlast.FuncCall) (string, error) {
	if len(f.Args) != 1 {
		return "", fmt.Errorf("load_history takes the table name, as in load_history('sales_ods')")
	}
	lit, ok := f.Args[0].(*sqlast.Literal)
	if !ok || lit.Kind != sqlast.LitString {
		return "", fmt.Errorf("load_history takes the table name as a string, as in load_history('sales_ods')")
	}
	schema, name, spec, err := e.Table(ctx, core.NameFromString(lit.Value))
	if err != nil {
		return "", err
	}
	// Aggregates get h_ aliases: ClickHouse lets an alias shadow the column
	// of the same name in WHERE.
	return "(SELECT file_path, h_time AS last_copy_time, h_size AS file_size, h_status AS status, h_error AS first_error_message, " +
		"h_rows AS rows_loaded, h_rejected AS rows_rejected, pipe_name FROM (" +
		"SELECT file_path, pipe_name, argMax(last_copy_time, version) AS h_time, argMax(file_size, version) AS h_size, " +
		"argMax(status, version) AS h_status, argMax(first_error_message, version) AS h_error, " +
		"argMax(rows_loaded, version) AS h_rows, argMax(rows_rejected, version) AS h_rejected " +
		"FROM lakepipe.load_history WHERE table_name = " + chsql.QuoteString(core.Display(schema, name)) +
		// Records of an earlier table of the same name are not this table's.
		fmt.Sprintf(" AND last_copy_time >= toDateTime(%d)", spec.CreatedAt.Unix()) +
		" GROUP BY file_path, pipe_name) WHERE h_time > now() - " + strconv.Itoa(e.Cfg.LoadHistoryDays*86400) +
		" ORDER BY h_time, file_path)", nil
}
