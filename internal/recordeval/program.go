package recordeval

import (
	"fmt"
	"sync"
	"time"

	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/recordeval/rawjson"
	"github.com/lakepipe/lakepipe/internal/recordeval/values"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// Record is one Kafka record as the SELECT list sees it. Append reads it
// only while it runs: the row it appends holds copies, not references.
type Record struct {
	Key, Value []byte
	Topic      string
	Partition  int32
	Offset     int64
	Timestamp  time.Time
	Headers    []Header
}

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// recordColumns are the columns of a record, in SELECT * order.
var recordColumns = []string{"key", "value", "topic", "partition", "offset", "timestamp", "headers"}

const (
	colKey = iota
	colValue
	colTopic
	colPartition
	colOffset
	colTimestamp
	colHeaders
)

// Program is a compiled SELECT list (and WHERE) over records. It is
// immutable after Compile and safe for concurrent use.
type Program struct {
	// Columns are the output column names, in order: the alias, else the
	// column name (looking through casts), else the last ['key'] of an
	// index, else col<N> with N the item's 1-based position.
	Columns []string

	cols      []node
	where     node
	keyJSON   bool
	valueJSON bool
	kinds     []values.Kind // static kind of each output column, or KUnknown
	// fields[i] is column i when it is CAST(PARSE_JSON(…)['key'] AS T),
	// which writes its cell itself (castNode.emit); general turns that
	// off (tests compare both ways).
	fields  []*castNode
	general bool
	nslots  int // memoized JSON parses
	keySlot int // memo slots of the 'json' key and value, or -1
	valSlot int
	pool    sync.Pool
}

// Typed is the type output column i always has when it can be handed over
// as a value rather than text: "BIGINT" (Vector.Int), "DOUBLE"
// (Vector.Float), "TIMESTAMP" or "DATE" (Vector.Time); else "".
func (p *Program) Typed(i int) string {
	switch k := p.kinds[i]; k {
	case values.KInt, values.KFloat, values.KTime, values.KDate:
		return k.String()
	}
	return ""
}

// NewBatch returns an empty batch with one vector per output column, with
// room for capacity rows. Columns i with typed[i] (see Typed) get their
// values as Int, Float or Time; the others as Text.
func (p *Program) NewBatch(capacity int, typed []bool) *rowio.Batch {
	b := &rowio.Batch{
		Cols: make([]rowio.Vector, len(p.Columns)),
		Line: make([]int64, 0, capacity),
	}
	for i := range b.Cols {
		v := &b.Cols[i]
		v.Null = make([]bool, 0, capacity)
		// Append carves text cells from an arena whose chunks are never
		// written again (see arena).
		v.Kept = true
		if i >= len(typed) || !typed[i] {
			v.Text = make([][]byte, 0, capacity)
			continue
		}
		switch p.kinds[i] {
		case values.KInt:
			v.Int = make([]int64, 0, capacity)
		case values.KFloat:
			v.Float = make([]float64, 0, capacity)
		case values.KTime, values.KDate:
			v.Time = make([]time.Time, 0, capacity)
		default:
			v.Text = make([][]byte, 0, capacity)
		}
	}
	return b
}

// ResetBatch empties b for reuse, keeping its capacity. The Text cells that
// Append stored are never overwritten, so cells read before the reset stay
// valid for as long as they are referenced.
func ResetBatch(b *rowio.Batch) {
	for i := range b.Cols {
		v := &b.Cols[i]
		clear(v.Text)
		v.Text = v.Text[:0]
		v.Null = v.Null[:0]
		v.Int, v.Float, v.Time = v.Int[:0], v.Float[:0], v.Time[:0]
	}
	b.Rows = 0
	b.Line = b.Line[:0]
	b.Errors = b.Errors[:0]
}

// Append evaluates r and appends one row to b: a Text or Null cell per
// column, r.Offset to b.Line, and Rows++. b must have len(p.Columns) vectors
// (see NewBatch). kept is false, and nothing is appended, when WHERE is not
// TRUE for r. On error nothing is appended either; the error names the
// column (or WHERE) and what failed, e.g. `column log_time: cannot cast
// "yesterday" to TIMESTAMP`. Such errors are about the record's data: the
// same record always fails the same way. Append never panics on any record.
func (p *Program) Append(b *rowio.Batch, r *Record) (kept bool, err error) {
	st := p.getState()
	kept, err, ok := p.append(st, b, r)
	if ok {
		p.putState(st)
	}
	return kept, err
}

// Evaluator is Append for one goroutine: it keeps its scratch memory from
// one record to the next instead of taking it from a pool each time.
type Evaluator struct {
	p  *Program
	st *state
}

// Evaluator returns an Evaluator of p; use one per goroutine.
func (p *Program) Evaluator() *Evaluator { return &Evaluator{p: p, st: p.getState()} }

// Append is Program.Append.
func (e *Evaluator) Append(b *rowio.Batch, r *Record) (bool, error) {
	kept, err, ok := e.p.append(e.st, b, r)
	if !ok {
		e.st = e.p.newState()
	}
	e.st.r = nil // the record is the caller's again
	return kept, err
}

// append is Append with st; ok is false when evaluation panicked, leaving
// st in a state not to be used again.
func (p *Program) append(st *state, b *rowio.Batch, r *Record) (kept bool, err error, ok bool) {
	if len(b.Cols) != len(p.cols) {
		return false, fmt.Errorf("recordeval: batch has %d columns, the SELECT list has %d", len(b.Cols), len(p.cols)), true
	}
	// A record nobody foresaw must not take the worker down: a panic while
	// evaluating it makes it a bad record, and the batch is left as it was
	// before it. (Evaluation runs on the pipe's evaluator goroutines, where
	// nothing else would recover.) The state is not used again: it may be
	// half updated.
	rows := b.Rows
	ok = true
	defer func() {
		if v := recover(); v != nil {
			truncate(b, rows)
			kept, err, ok = false, fmt.Errorf("the record could not be evaluated: %s", errtext.Cap(fmt.Sprint(v), errtext.MaxValue)), false
		}
	}()
	if err := st.begin(r); err != nil {
		return false, err, true
	}
	if p.where != nil {
		v, err := p.where.eval(st)
		if err == nil {
			var t values.Tri
			t, err = st.Truth(v)
			if err == nil && t != values.TriTrue {
				return false, nil, true
			}
		}
		if err != nil {
			return false, fmt.Errorf("WHERE: %w", err), true
		}
	}
	// Each column writes its cell straight into its vector; a column that
	// fails takes back the cells the columns before it wrote.
	for i, n := range p.cols {
		vec := &b.Cols[i]
		var err error
		if f := p.fields[i]; f != nil && !p.general {
			err = f.emit(st, i, vec)
		} else {
			var v values.Value
			if v, err = n.eval(st); err == nil {
				err = p.put(st, i, v, vec)
			}
		}
		if err != nil {
			truncate(b, rows)
			return false, fmt.Errorf("column %s: %w", p.Columns[i], err), true
		}
	}
	b.Line = append(b.Line, r.Offset)
	b.Rows++
	return true, nil, true
}

// put appends v to vec, output column i.
func (p *Program) put(st *state, i int, v values.Value, vec *rowio.Vector) error {
	if vec.Text == nil {
		k := p.kinds[i]
		if v.Kind != values.KNull && v.Kind != k && !(k == values.KTime && v.Kind == values.KDate) {
			// Typed columns have a static kind: anything else is a bug,
			// which this record reports rather than a wrong value.
			return fmt.Errorf("a %s where a %s was expected", v.Kind, k)
		}
		switch k {
		case values.KInt:
			vec.Int = append(vec.Int, v.Int)
		case values.KFloat:
			vec.Float = append(vec.Float, v.Float)
		default:
			vec.Time = append(vec.Time, v.Time())
		}
		vec.Null = append(vec.Null, v.Kind == values.KNull)
		return nil
	}
	s, null := st.Text(v)
	var cell []byte
	if !null {
		cell = st.out.put(s)
	}
	vec.Text = append(vec.Text, cell)
	vec.Null = append(vec.Null, null)
	return nil
}

// truncate takes b back to its first rows rows.
func truncate(b *rowio.Batch, rows int) {
	for i := range b.Cols {
		v := &b.Cols[i]
		v.Text = v.Text[:min(rows, len(v.Text))]
		v.Null = v.Null[:min(rows, len(v.Null))]
		v.Int = v.Int[:min(rows, len(v.Int))]
		v.Float = v.Float[:min(rows, len(v.Float))]
		v.Time = v.Time[:min(rows, len(v.Time))]
	}
	b.Line, b.Rows = b.Line[:min(rows, len(b.Line))], rows
}

func (p *Program) getState() *state {
	if st, ok := p.pool.Get().(*state); ok {
		return st
	}
	return p.newState()
}

func (p *Program) newState() *state { return &state{p: p, memo: make([]memo, p.nslots)} }

func (p *Program) putState(st *state) {
	st.r = nil
	p.pool.Put(st)
}

// state is the scratch memory of one Append. Values point into the record,
// into scratch or into memoized JSON; all of it is valid until the next
// begin.
type state struct {
	p    *Program
	r    *Record
	gen  uint64 // record generation, for memo
	memo []memo
	values.Ctx
	tmp     []byte         // short-lived: JSON keys being compared
	stack   []values.Value // function arguments
	keyRaw  []byte         // validated JSON of the key and value ('json' formats)
	valRaw  []byte
	headers []byte // JSON of the headers, built on first use
	hdrGen  uint64
	out     arena
}

// memo is one memoized JSON parse.
type memo struct {
	gen uint64
	raw []byte // nil: NULL
	err error
	// members index raw's members when it is an object, built by the first
	// lookup of the record, so that further lookups do not rescan raw.
	members []member
	indexed bool
}

type member struct {
	k, v          []byte
	plain, vplain bool // see rawjson.MemberFunc
}

// set records the parse of this record.
func (m *memo) set(gen uint64, raw []byte, err error) {
	m.gen, m.raw, m.err, m.indexed = gen, raw, err, false
}

// parse validates s as the JSON of this record and records it, with its
// members indexed from the same pass when it is an object.
func (m *memo) parse(gen uint64, s []byte) ([]byte, error) {
	m.members = m.members[:0]
	raw, err := rawjson.ValidMembers(s, m.add)
	m.set(gen, raw, err)
	m.indexed = err == nil && len(raw) > 0 && raw[0] == '{'
	return raw, err
}

func (m *memo) add(k []byte, plain bool, v []byte, vplain bool) {
	m.members = append(m.members, member{k: k, v: v, plain: plain, vplain: vplain})
}

// get returns the value of key in the memoized object raw (which must be
// m.raw), or nil; the last of duplicate keys wins, as in objectGet.
// vplain is true when the value is a plain string (rawjson.MemberFunc).
func (m *memo) get(raw, key []byte, tmp *[]byte) (v []byte, vplain bool) {
	if len(raw) == 0 || len(raw) != len(m.raw) || &raw[0] != &m.raw[0] {
		return rawjson.ObjectGet(raw, key, tmp), false
	}
	if !m.indexed {
		m.members = m.members[:0]
		rawjson.EachMember(m.raw, m.add)
		m.indexed = true
	}
	for i := len(m.members) - 1; i >= 0; i-- {
		if e := &m.members[i]; rawjson.KeyEqual(e.k, e.plain, key, tmp) {
			return e.v, e.vplain
		}
	}
	return nil, false
}

func (st *state) begin(r *Record) error {
	st.r = r
	st.gen++
	st.Ctx.Reset()
	st.stack = st.stack[:0]
	st.keyRaw, st.valRaw = nil, nil
	if st.p.keyJSON && len(r.Key) > 0 {
		raw, err := st.memo[st.p.keySlot].parse(st.gen, r.Key)
		if err != nil {
			st.memo[st.p.keySlot].gen = 0
			return fmt.Errorf("key is not valid JSON (key format 'json'): %w", err)
		}
		st.keyRaw = raw
	}
	if st.p.valueJSON && len(r.Value) > 0 {
		raw, err := st.memo[st.p.valSlot].parse(st.gen, r.Value)
		if err != nil {
			st.memo[st.p.valSlot].gen = 0
			return fmt.Errorf("value is not valid JSON (value format 'json'): %w", err)
		}
		st.valRaw = raw
	}
	return nil
}

// arena hands out output cells carved from large chunks. Chunks are never
// written again once a cell lies in them, so cells stay valid for as long as
// they are referenced, whatever happens to the batch.
type arena struct {
	buf []byte
}

const arenaChunk = 64 << 10

func (a *arena) put(s []byte) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	if cap(a.buf)-len(a.buf) < len(s) {
		a.buf = make([]byte, 0, max(arenaChunk, len(s)))
	}
	start := len(a.buf)
	a.buf = append(a.buf, s...)
	return a.buf[start:len(a.buf):len(a.buf)]
}
