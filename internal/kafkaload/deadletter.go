package kafkaload

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// DeadLetterColumns is the column list of a Kafka pipe's dead-letter table
// (DEAD_LETTER_TABLE), which CREATE PIPE and ALTER PIPE create when it is
// missing: every bad record with where it came from and what was wrong.
const DeadLetterColumns = "(topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, key STRING, value STRING, error STRING)"

var deadLetterNames = []string{"topic", "partition", "offset", "timestamp", "key", "value", "error"}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// CheckDeadLetterTable checks a DEAD_LETTER_TABLE value: a table name,
// optionally qualified by its schema.
func CheckDeadLetterTable(v string) error {
	if !tableName.MatchString(strings.TrimSpace(v)) {
		return fmt.Errorf("DEAD_LETTER_TABLE = %q: expected a table name (letters, digits and _, optionally schema.table)", v)
	}
	return nil
}

// deadLetterTarget resolves the pipe's dead-letter table, if it has one:
// it must have every column of DeadLetterColumns (by name).
func (e *Consumer) deadLetterTarget(ctx context.Context, pipe, name string) (*core.LoadTarget, []int, error) {
	if name == "" {
		return nil, nil, nil
	}
	schema, table, spec, err := e.Table(ctx, core.NameFromString(name))
	if err != nil {
		return nil, nil, fmt.Errorf("pipe %s: its dead-letter table: %w", pipe, err)
	}
	cols, err := core.TargetColumns(core.Display(schema, table), spec, nil)
	if err != nil {
		return nil, nil, err
	}
	t := core.TableTarget(schema, table, spec, cols)
	source := make([]int, len(t.Cols))
	found := 0
	for j, c := range t.Cols {
		source[j] = -1
		for i, n := range deadLetterNames {
			if strings.EqualFold(c.Name, n) {
				source[j] = i
				found++
			}
		}
	}
	if found != len(deadLetterNames) {
		return nil, nil, fmt.Errorf("pipe %s: dead-letter table %s needs the columns %s", pipe, t.Display, DeadLetterColumns)
	}
	return &t, source, nil
}

// deadLetters writes a batch's bad records to the pipe's dead-letter
// table as they come, under the batch's commit id, so that a retried
// batch removes them with its rows. Memory is bounded by the Inserter's
// block and a few MiB of records waiting.
type deadLetters struct {
	mu     sync.Mutex
	ins    *chstore.Inserter
	b      *rowio.Batch
	bytes  int
	source []int
	n      int64
	err    error
}

// maxDeadLetterValue bounds the key and the value a dead letter keeps.
const maxDeadLetterValue = 1 << 20

func (r *KafkaPipeRun) openDeadLetters(ctx context.Context, commit uint64) (*deadLetters, error) {
	if r.dlt == nil {
		return nil, nil
	}
	ins, err := r.e.St.NewInserter(ctx, r.dlt.DB, r.dlt.Table, r.dlt.Cols, core.CommitColumn, commit)
	if err != nil {
		return nil, fmt.Errorf("pipe %s: dead-letter table %s: %w", r.Name, r.dlt.Display, err)
	}
	return &deadLetters{ins: ins, source: r.dltSource, b: newDeadLetterBatch()}, nil
}

func newDeadLetterBatch() *rowio.Batch {
	b := &rowio.Batch{Cols: make([]rowio.Vector, len(deadLetterNames))}
	return b
}

func clip(v []byte) []byte {
	return bytes.Clone(v[:min(len(v), maxDeadLetterValue)])
}

// add keeps one bad record.
func (d *deadLetters) add(kr *kgo.Record, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return
	}
	cells := [][]byte{[]byte(kr.Topic), strconv.AppendInt(nil, int64(kr.Partition), 10), strconv.AppendInt(nil, kr.Offset, 10),
		[]byte(kr.Timestamp.UTC().Format("2006-01-02 15:04:05")), clip(kr.Key), clip(kr.Value), []byte(errtext.Cap(msg, errtext.MaxMessage))}
	for i, c := range cells {
		d.b.Cols[i].Text = append(d.b.Cols[i].Text, c)
		d.bytes += len(c)
	}
	d.b.Rows++
	d.b.Line = append(d.b.Line, int64(d.b.Rows))
	d.n++
	if d.b.Rows >= 256 || d.bytes >= 4<<20 {
		d.flushLocked()
	}
}

func (d *deadLetters) flushLocked() {
	if d.b.Rows == 0 || d.err != nil {
		return
	}
	errs, err := d.ins.Add(d.b, d.source)
	if err == nil && len(errs) > 0 {
		err = fmt.Errorf("record %d: %s", errs[0].Line, errs[0].Msg)
	}
	if err != nil {
		d.err = fmt.Errorf("dead-letter table: %w", err)
	}
	d.b, d.bytes = newDeadLetterBatch(), 0
}

// close sends what waits and ends the insert: the number of dead letters.
func (d *deadLetters) close() (int64, error) {
	if d == nil {
		return 0, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushLocked()
	if d.err != nil {
		d.ins.Abort()
		return 0, d.err
	}
	if _, err := d.ins.Close(); err != nil {
		return 0, fmt.Errorf("dead-letter table: %w", err)
	}
	return d.n, nil
}

func (d *deadLetters) abort() {
	if d != nil {
		d.ins.Abort()
	}
}
