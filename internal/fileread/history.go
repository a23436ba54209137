package fileread

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/objstore"
	"github.com/lakepipe/lakepipe/internal/sqlast"
	"github.com/lakepipe/lakepipe/schemas"
)

// RecordLoads writes load history rows for a table (pipe "" for one-shot
// COPY). A later record of the same file replaces the earlier one.
func (e *Reader) RecordLoads(ctx context.Context, table, pipe, loadID string, loads []FileLoad) error {
	rows := make([][]any, len(loads))
	now := time.Now().UTC()
	for i, l := range loads {
		modified := l.Modified.UTC()
		if modified.Before(time.Unix(0, 0)) {
			modified = time.Unix(0, 0).UTC() // not known (DateTime starts at the epoch)
		}
		var purge uint8
		if l.Purge {
			purge = 1
		}
		rows[i] = []any{table, pipe, l.Path, l.ETag, uint64(l.Size), now, string(l.Status), l.FirstError, l.FirstErrLine,
			uint64(l.Rows), uint64(l.Rejected), cmp.Or(l.LoadID, loadID), uint64(now.UnixNano()) + uint64(i), modified, purge}
	}
	err := e.St.InsertRows(ctx, schemas.SystemDB, "load_history", []string{"table_name", "pipe_name", "file_path", "etag", "file_size",
		"last_copy_time", "status", "first_error_message", "first_error_line", "rows_loaded", "rows_rejected", "load_id", "version",
		"file_modified", "purge"}, rows)
	if err != nil {
		return fmt.Errorf("record load history of %s: %w", table, err)
	}
	return nil
}

// LeftLoaded is a file that a COPY … PURGE loaded and did not remove.
type LeftLoaded struct {
	Rows int64
	At   time.Time // when it was recorded
}

// purgeLeftChunk is how many files one lookup of PurgeLeft names.
const purgeLeftChunk = 1000

// PurgeLeft returns those of files whose very version (etag and
// last-modified time) a COPY … PURGE into table recorded as LOADED, as
// its last record of the path: the COPY stopped (a kill, a failed DELETE)
// between recording the file and removing it. The record is written once
// all of the file's rows are in and names their load (committed then, or
// registered by maintenance as recorded), so the same COPY run again
// removes such a file instead of loading it twice. A path recorded by a
// COPY without PURGE, or uploaded again since (a new last-modified time,
// even with the same bytes), is not left over. One lookup per 1,000 files
// of the COPY, reading only their keys.
func (e *Reader) PurgeLeft(ctx context.Context, table string, since time.Time, files []objstore.Object) (map[string]LeftLoaded, error) {
	out := map[string]LeftLoaded{}
	for chunk := range slices.Chunk(files, purgeLeftChunk) {
		res, err := e.St.Query(ctx, "SELECT file_path, argMax(status, version), argMax(etag, version), toUInt32(argMax(file_modified, version)), "+
			"argMax(purge, version), argMax(rows_loaded, version), toUInt32(argMax(last_copy_time, version)) FROM "+schemas.SystemDB+".load_history"+
			" WHERE table_name = "+chsql.QuoteString(table)+" AND pipe_name = ''"+
			fmt.Sprintf(" AND last_copy_time >= toDateTime(%d)", since.Unix())+
			" AND file_path IN ("+chsql.QuoteList(chunk, func(f objstore.Object) string { return f.Path })+") GROUP BY file_path")
		if err != nil {
			return nil, fmt.Errorf("read the load history of %s: %w", table, err)
		}
		recs := make(map[string][]any, len(res.Rows))
		for _, row := range res.Rows {
			recs[row[0].(string)] = row
		}
		for _, f := range chunk {
			row, ok := recs[f.Path]
			if !ok || jobs.FileStatus(row[1].(string)) != jobs.FileLoaded || row[4].(uint8) != 1 ||
				row[2].(string) != f.ETag || int64(row[3].(uint32)) != f.Modified.Unix() {
				continue
			}
			out[f.Path] = LeftLoaded{Rows: int64(row[5].(uint64)), At: time.Unix(int64(row[6].(uint32)), 0).UTC()}
		}
	}
	return out, nil
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
