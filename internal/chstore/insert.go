package chstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2"
	chcolumn "github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// RowError is a row that could not be loaded, with where it came from.
type RowError struct {
	Line int64
	Msg  string
}

// Inserter loads batches read by package formats into one table. Columns
// of the target that no source column feeds get NULL (or their zero value).
// Blocks are sent when they reach BlockRows; Close sends the rest. Rows are
// visible once the block that holds them has been sent.
type Inserter struct {
	store   *Store
	db      string
	table   string
	cols    []rowio.Column
	columns []column
	query   string
	// BlockRows is the number of rows per block (default 131072): large
	// enough for ClickHouse to insert efficiently, small enough that
	// converting the next block overlaps inserting this one.
	BlockRows int
	// BlockBytes bounds the text held for one block, so that memory stays
	// flat however large the file (default 16 MiB).
	BlockBytes   int
	pending      int
	pendingBytes int
	sent         int64
	send         chan block
	done         chan error
	closed       bool
	aborted      bool
	staging      bool // Stage: hold every row for Take, never flush
	stageLimit   int
	expect       int64 // Expect: rows still to come, 0 when not known
}

// Expect tells the Inserter how many rows are coming (a Kafka batch knows
// its records): each block's columns are then made their full size once,
// instead of growing from empty, which copies them and touches fresh
// memory at every doubling.
func (in *Inserter) Expect(rows int64) { in.expect = rows }

// ErrFenced is the cause with which an attempt's context is cancelled
// when the attempt may no longer write: it lost its lease, and another
// attempt may be loading the same rows (docs/exactly-once.md). An
// Inserter whose context ends with it sends no further block and walks
// away from its INSERT instead of ending it: ClickHouse then drops the
// rows it had not written into parts yet (measured on 18.16: 300,000 rows
// flushed, the connection closed without the INSERT's end, none written).
var ErrFenced = errors.New("this attempt lost its lease")

// fenced reports whether ctx ended with ErrFenced.
func fenced(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrFenced) }

// ErrStageFull is Add's error on a staged Inserter whose rows grew past
// the limit given to Stage: the file is too large once read to wait in
// memory, and is to be loaded by a streaming Inserter instead.
var ErrStageFull = errors.New("rows too large to stage")

type block struct {
	values []any
	rows   int
}

// NewInserter prepares inserts into db.table for the given target columns
// (name and ClickHouse type). Sending happens on its own goroutine so that
// reading and converting the next rows overlaps the network write.
//
// A non-zero commit is written into every row's commitColumn, which tags
// the rows of one load so that a retried load can find (and remove) the
// rows of an attempt that did not finish.
func (s *Store) NewInserter(ctx context.Context, db, table string, cols []rowio.Column, commitColumn string, commit uint64) (*Inserter, error) {
	in := &Inserter{store: s, db: db, table: table, cols: cols, BlockRows: 128 << 10, BlockBytes: 16 << 20}
	names := make([]string, len(cols))
	for i, c := range cols {
		col, err := newColumn(c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		in.columns = append(in.columns, col)
		names[i] = chsql.QuoteIdent(c.Name)
	}
	if commit != 0 {
		in.columns = append(in.columns, &constCol{v: commit})
		in.cols = append(append([]rowio.Column(nil), cols...), rowio.Column{Name: commitColumn, Type: "UInt64"})
		names = append(names, chsql.QuoteIdent(commitColumn))
	}
	// 18.16 refuses an INSERT block without the column list, so it is
	// always spelled out.
	in.query = "INSERT INTO " + chsql.Table(db, table) + " (" + strings.Join(names, ", ") + ")"
	in.send = make(chan block, 1)
	in.done = make(chan error, 1)
	go in.sender(ctx)
	return in, nil
}

// sender writes every block of the Inserter as part of one INSERT: each
// block is flushed as it comes, so the server inserts one block while the
// next is being read and converted.
func (in *Inserter) sender(ctx context.Context) {
	var (
		batch driver.Batch
		err   error
	)
	for b := range in.send {
		if err == nil && fenced(ctx) {
			err = context.Cause(ctx)
		}
		if err != nil {
			continue // drain after a failure
		}
		first := batch == nil
		if first {
			// The INSERT outlives a cancelled ctx: a cancelled caller
			// aborts, and an abort must end the INSERT, not walk away
			// from it (see Abort). The caller stops handing blocks over.
			if batch, err = in.store.conn.PrepareBatch(context.WithoutCancel(ctx), in.query); err != nil {
				err = fmt.Errorf("insert into %s.%s: %w", in.db, in.table, Error(err))
				continue
			}
		}
		err = in.appendBlock(batch, b, first)
	}
	switch {
	case batch != nil && fenced(ctx):
		// Another attempt may own the rows now: rows not yet written
		// must not be, so the INSERT is abandoned, not ended.
		_ = batch.Abort()
		err = context.Cause(ctx)
	case err == nil && batch != nil && in.aborted:
		// Blocks already flushed are parts the server writes as it reads
		// them, whatever the client does next. Ending the INSERT waits
		// until it has written them all, so that the caller's removal of
		// the commit afterwards finds every one (an abandoned connection
		// let the server write a block after that removal).
		_ = batch.Send()
	case err == nil && batch != nil:
		if serr := batch.Send(); serr != nil {
			err = fmt.Errorf("insert into %s.%s: %w", in.db, in.table, Error(serr))
		}
	case batch != nil:
		_ = batch.Abort()
	}
	in.done <- err
}

// reserveStrings sizes the driver's String columns of a new INSERT for a
// block like its first. The driver copies each string into one buffer
// grown by append (by 1.25 from a few hundred strings on), which copied
// every byte about four times more and took ~8 % of a Kafka pipe's CPU
// (bench:kafka, 2026-12-06); its Flush keeps the capacity for the INSERT's
// next blocks, but it offers no way to reserve. Appending one string of
// the block's bytes with as many empty ones as rows, then resetting, does:
// the driver allocates exactly what that append needs. Columns the
// driver wraps differently (LowCardinality) are left to grow.
func reserveStrings(batch driver.Batch, values []any) {
	const minBytes = 64 << 10 // growing a small column costs little
	var cols []chcolumn.Interface
	for i, v := range values {
		rows, n := 0, 0
		switch vals := v.(type) {
		case []string:
			rows = len(vals)
			for _, s := range vals {
				n += len(s)
			}
		case []*string: // a Nullable block with NULLs (nullableValues)
			rows = len(vals)
			for _, s := range vals {
				if s != nil {
					n += len(*s)
				}
			}
		}
		if n < minBytes {
			continue
		}
		if cols == nil {
			cols = batch.Columns()
		}
		if i >= len(cols) {
			return
		}
		c, base := cols[i], cols[i]
		if nc, ok := c.(*chcolumn.Nullable); ok {
			base = nc.Base()
		}
		if _, ok := base.(*chcolumn.String); !ok || c.Rows() != 0 {
			continue
		}
		placeholder := make([]string, rows)
		// Its bytes are never read but by that copy: zeroed memory fresh
		// from the heap, not written here.
		zeros := make([]byte, n)
		placeholder[0] = unsafe.String(unsafe.SliceData(zeros), n)
		_, _ = c.Append(placeholder)
		c.Reset() // it had no rows: nothing of the block is lost
	}
}

// appendBlock hands a block to the driver and sends it; first is the
// INSERT's first block.
func (in *Inserter) appendBlock(batch driver.Batch, b block, first bool) (err error) {
	// The sender is a goroutine of its own: a panic in the driver over an
	// odd value would end the process, so it becomes this insert's error.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("insert into %s.%s: the ClickHouse driver failed on a block: %v", in.db, in.table, p)
		}
	}()
	if first {
		reserveStrings(batch, b.values)
	}
	for i, v := range b.values {
		if err := batch.Column(i).Append(v); err != nil {
			return fmt.Errorf("insert into %s.%s column %s: %w", in.db, in.table, in.cols[i].Name, Error(err))
		}
	}
	if err := batch.Flush(); err != nil {
		return fmt.Errorf("insert into %s.%s: %w", in.db, in.table, Error(err))
	}
	return nil
}

// Add converts a batch. source[i] is the index in b.Cols feeding target
// column i, or -1. Rows with a value that does not convert are left out and
// returned as RowErrors (with the file line from b.Line); the reader's own
// row errors are returned too.
func (in *Inserter) Add(b *rowio.Batch, source []int) (_ []RowError, err error) {
	// Conversions run on callers' goroutines (a Kafka pipe's converter has
	// no other guard): a panic over a value nobody foresaw fails this
	// insert, which the caller aborts, instead of the process.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("insert into %s.%s: converting a block failed: %s", in.db, in.table, errtext.Cap(fmt.Sprint(p), errtext.MaxValue))
		}
	}()
	var errs []RowError
	for _, e := range b.Errors {
		errs = append(errs, RowError{Line: e.Line, Msg: e.Msg})
	}
	if b.Rows == 0 {
		return errs, nil
	}
	if in.pending == 0 && in.expect > in.sent {
		n := int(min(in.expect-in.sent, int64(in.BlockRows)))
		for _, col := range in.columns {
			col.reserve(n)
		}
	}
	var keep []bool
	bad := func(r int, msg string) {
		if keep == nil {
			keep = make([]bool, b.Rows)
			for i := range keep {
				keep[i] = true
			}
		}
		if keep[r] {
			keep[r] = false
			line := int64(r + 1)
			if r < len(b.Line) {
				line = b.Line[r]
			}
			errs = append(errs, RowError{Line: line, Msg: msg})
		}
	}
	for i, col := range in.columns {
		if i >= len(source) {
			col.addNull(b.Rows) // the commit column
			continue
		}
		if source[i] < 0 {
			col.addNull(b.Rows)
			continue
		}
		msgBad := func(r int, msg string) { bad(r, "column "+in.cols[i].Name+": "+msg) }
		col.add(&b.Cols[source[i]], b.Rows, msgBad)
	}
	n := b.Rows
	if keep != nil {
		for _, col := range in.columns {
			col.keep(keep)
		}
		n = 0
		for _, k := range keep {
			if k {
				n++
			}
		}
	}
	in.pending += n
	for _, v := range b.Cols {
		for _, t := range v.Text {
			in.pendingBytes += len(t)
		}
		if v.Arrow != nil {
			in.pendingBytes += v.Arrow.Data().Len() * 8
		}
		in.pendingBytes += 8*(len(v.Int)+len(v.Float)) + 24*len(v.Time)
	}
	if in.staging && in.pendingBytes > in.stageLimit {
		return errs, fmt.Errorf("insert into %s.%s: %w (over %d bytes)", in.db, in.table, ErrStageFull, in.stageLimit)
	}
	if !in.staging && (in.pending >= in.BlockRows || in.pendingBytes >= in.BlockBytes) {
		if err := in.Flush(); err != nil {
			return errs, err
		}
	}
	return errs, nil
}

// Flush hands the pending rows to the sender.
func (in *Inserter) Flush() error {
	if in.pending == 0 {
		return nil
	}
	vals := make([]any, len(in.columns))
	for i, c := range in.columns {
		vals[i] = c.values()
	}
	select {
	case err := <-in.done:
		// The sender stopped early: report its error.
		in.done <- err
		return err
	case in.send <- block{values: vals, rows: in.pending}:
	}
	in.sent += int64(in.pending)
	in.pending, in.pendingBytes = 0, 0
	return nil
}

// Close sends what is pending and waits until every block is written.
// It returns the number of rows written.
func (in *Inserter) Close() (int64, error) {
	if in.closed {
		return in.sent, nil
	}
	in.closed = true
	err := in.Flush()
	close(in.send)
	if serr := <-in.done; serr != nil {
		return 0, serr
	}
	return in.sent, err
}

// Stage makes the Inserter hold every row it converts until Take, instead
// of sending blocks as they fill: the rows of a small file wait until the
// file is known to be good, and then go to the server with those of other
// files in one INSERT (InsertStaged). The caller bounds what one Inserter
// holds: once the text it holds passes limit bytes, Add fails with
// ErrStageFull. Call it before Add.
func (in *Inserter) Stage(limit int) { in.staging, in.stageLimit = true, limit }

// Staged is the converted rows of one staged load, not yet written.
type Staged struct {
	query  string
	values []any
	rows   int
	bytes  int
}

// Rows is the number of rows held.
func (s Staged) Rows() int64 { return int64(s.rows) }

// Bytes is about how much memory the rows hold (their text).
func (s Staged) Bytes() int64 { return int64(s.bytes) }

// Take ends a staged Inserter without writing anything and returns its
// rows for InsertStaged.
func (in *Inserter) Take() (Staged, error) {
	if in.closed {
		return Staged{}, fmt.Errorf("insert into %s.%s: Take after Close or Abort", in.db, in.table)
	}
	if in.sent > 0 {
		return Staged{}, fmt.Errorf("insert into %s.%s: Take after rows were sent (call Stage before Add)", in.db, in.table)
	}
	st := Staged{query: in.query, rows: in.pending, bytes: in.pendingBytes, values: make([]any, len(in.columns))}
	for i, c := range in.columns {
		st.values[i] = c.values()
	}
	in.pending, in.pendingBytes = 0, 0
	in.closed = true
	close(in.send)
	<-in.done // no block was handed over: the sender made no INSERT
	return st, nil
}

// InsertStaged writes the rows of several staged loads of one table in a
// single INSERT of one block: one part, one round trip, however many
// loads. Rows keep the commit ids their Inserters gave them. The loads
// must come from Inserters of the same table and columns.
func (s *Store) InsertStaged(ctx context.Context, loads []Staged) (err error) {
	var rows int
	for _, l := range loads {
		rows += l.rows
	}
	if rows == 0 {
		return nil
	}
	query := loads[0].query
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: the ClickHouse driver failed on a block: %s", query, errtext.Cap(fmt.Sprint(p), errtext.MaxValue))
		}
	}()
	batch, err := s.conn.PrepareBatch(ctx, query)
	if err != nil {
		return fmt.Errorf("%s: %w", query, Error(err))
	}
	for _, l := range loads {
		if l.query != query {
			_ = batch.Abort()
			return fmt.Errorf("insert of staged rows: %q and %q in one INSERT", query, l.query)
		}
		if l.rows == 0 {
			continue
		}
		for i, v := range l.values {
			if err := batch.Column(i).Append(v); err != nil {
				_ = batch.Abort()
				return fmt.Errorf("%s (column %d): %w", query, i+1, Error(err))
			}
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("%s: %w", query, Error(err))
	}
	return nil
}

// Sent is the number of rows handed to the sender so far.
func (in *Inserter) Sent() int64 { return in.sent }

// Abort drops the pending rows and stops the sender. Blocks already handed
// over are written: Abort returns once the server has them, so that a
// removal of the Inserter's commit that follows removes them all. Safe to
// call after Close.
func (in *Inserter) Abort() {
	if in.closed {
		return
	}
	in.closed = true
	in.aborted = true
	for _, c := range in.columns {
		c.values()
	}
	in.pending = 0
	close(in.send)
	<-in.done
}

// OneBlock makes an INSERT … SELECT run under ctx gather all its rows into
// one block before writing: one part per partition, which appears to
// readers at once, whole. The rows are held in memory meanwhile, so it is
// for inserts of bounded size (partial aggregates, one row per group).
func OneBlock(ctx context.Context) context.Context {
	const all = 1 << 62
	return WithSettings(ctx, clickhouse.Settings{"min_insert_block_size_rows": all, "min_insert_block_size_bytes": all})
}

type settingsKey struct{}

// WithSettings adds ClickHouse settings to the queries run under ctx, on
// top of those an earlier WithSettings put there (clickhouse.WithSettings
// alone would replace them).
func WithSettings(ctx context.Context, settings clickhouse.Settings) context.Context {
	merged := clickhouse.Settings{}
	if prev, ok := ctx.Value(settingsKey{}).(clickhouse.Settings); ok {
		for k, v := range prev {
			merged[k] = v
		}
	}
	for k, v := range settings {
		merged[k] = v
	}
	return clickhouse.Context(context.WithValue(ctx, settingsKey{}, merged), clickhouse.WithSettings(merged))
}
