package formats

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// arrowStreamBuffer is the read-ahead under the IPC message reader: it
// reads each message in three small parts, which would otherwise be three
// reads on the network. Bodies larger than it bypass it.
const arrowStreamBuffer = 64 << 10

// An Arrow IPC file (the random-access format) is "ARROW1", two bytes of
// padding, a complete stream (with its end-of-stream marker), a footer
// indexing the stream's messages, the footer's int32 length and "ARROW1"
// again.
var arrowFileMagic = []byte("ARROW1")

const arrowFileHead = 8

// newArrowAllocator gives the allocator of the IPC reader's buffers; see
// arrowReader for why it must be a GoAllocator. Tests swap it for one that
// counts (and poisons) what is freed.
var newArrowAllocator = func() memory.Allocator { return memory.NewGoAllocator() }

// cappedAllocator refuses any one allocation past max (a panic with a
// *rowio.LimitError, which Open's guard makes the file's error): the
// IPC reader sizes a decompressed buffer by the 8 bytes in front of it.
// checkArrowMessage adds those sizes up before, reading the buffers the
// reader will read; this is the bound should the two readings ever part
// (they did once: the fuzzer's 4 TB buffer was one the reader took from
// past a batch's list, see arrowLayout). Nothing a stream within the
// limits holds needs more than its decompressed body.
type cappedAllocator struct {
	memory.Allocator
	max int64
}

func (a cappedAllocator) check(size int) {
	if int64(size) > a.max {
		panic(&rowio.LimitError{Limit: "MaxArrowMessageBytes", Value: a.max / 4, What: fmt.Sprintf("a buffer of %s (at most four times the limit once decompressed)", rowio.ByteSize(int64(size)))})
	}
}

func (a cappedAllocator) Allocate(size int) []byte {
	a.check(size)
	return a.Allocator.Allocate(size)
}

func (a cappedAllocator) Reallocate(size int, b []byte) []byte {
	a.check(size)
	return a.Allocator.Reallocate(size, b)
}

// arrowReader reads an Arrow IPC stream (format "ARROW"): a schema message,
// then record batches, then optionally an end-of-stream marker. The stream
// is read to its end: bytes after the end-of-stream marker are an error,
// as a second stream appended to the first would otherwise be dropped
// unread. A stream cut exactly between two messages cannot be told from
// one closed without the marker (which the format allows), so it reads as
// complete. An Arrow IPC file is read too, front to back as the stream it
// embeds; its footer is only checked for shape (it indexes the messages
// already read), so the file may arrive through a pipe.
//
// Batches: one per IPC record batch; a record batch of more than
// Options.BatchRows rows is cut into zero-copy slices of at most BatchRows
// rows, so that BatchRows means the same for every reader. Record batches
// are never merged (that would copy), and empty ones are skipped.
//
// Columns and Schema work as for Parquet: without Schema every field of
// the stream's schema is a column; with it, exactly the named fields in
// that order (exact name first, then case-insensitive), and a name the
// stream lacks is an error from Open. Column.Type is the field's type
// mapped by ClickHouseType ("" for the Null type, whose values fit any
// Nullable column), and Vector.Arrow is the field's array when
// nativeArrow accepts its type, or else its text as an *array.String (as
// the Parquet reader does), so consumers only meet the array types
// ClickHouseType names.
//
// The bytes come from outside, so nothing in them may crash the process:
// each message's metadata is checked before arrow-go reads it (see
// arrowMessages), and every array handed out passes array.ValidateFull
// first (see validateArray). An inconsistent stream (bad offsets, a null
// count that lies, a dictionary index out of range, invalid UTF-8 in a
// utf8 column) is an error naming the source, not a panic in whoever
// reads the values.
//
// Memory: the IPC record is retained until the Next after its last row
// was delivered, and the slices and text arrays made for a batch are
// released at the next Next, as the Reader contract allows. Buffers come
// from a memory.GoAllocator on purpose: its Free is a no-op and its memory
// is ordinary Go heap, so a string that chstore keeps pointing into a
// buffer (zero-copy Value) keeps that memory alive after Release instead
// of reading memory handed to someone else. An allocator that recycles
// memory (mallocator, cgo) would break that.
type arrowReader struct {
	name string
	cnt  *rowio.CountingReader
	dec  *rowio.Decompressor
	in   *bufio.Reader
	file bool // the stream is the body of an Arrow IPC file
	ipc  *ipc.Reader
	cols []rowio.Column
	// order[i] is the schema field of output column i; check lists the
	// distinct fields to validate.
	order []int
	check []int
	// text[i]: column i is rendered to *array.String (see ClickHouseType).
	text      []bool
	batchRows int64
	rec       arrow.RecordBatch // the current IPC record, retained
	off       int64             // rows of rec already delivered
	made      []arrow.Array     // arrays made for the current batch
	row       int64             // rows delivered so far
	err       error             // sticky end: io.EOF or the failure
	lim       arrowLimits
	limits    rowio.Limits // for textArray
	batch     rowio.Batch
}

func newArrowReader(src rowio.Source, opts rowio.Options) (*arrowReader, error) {
	cnt, dec, err := openSequential(src, opts)
	if err != nil {
		return nil, err
	}
	r := &arrowReader{name: src.Name, cnt: cnt, dec: dec, in: bufio.NewReaderSize(dec, arrowStreamBuffer), batchRows: int64(opts.BatchRows)}
	if err := r.open(opts); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *arrowReader) open(opts rowio.Options) error {
	if head, _ := r.in.Peek(arrowFileHead); bytes.HasPrefix(head, arrowFileMagic) {
		r.file = true
		_, _ = r.in.Discard(arrowFileHead)
	}
	r.lim = newArrowLimits(opts.Limits)
	r.limits = opts.Limits.WithDefaults()
	mem := cappedAllocator{Allocator: newArrowAllocator(), max: r.lim.maxUncompressed}
	rd, err := ipc.NewReaderFromMessageReader(newArrowMessages(r.in, mem, r.lim), ipc.WithAllocator(mem))
	if err != nil {
		if errors.Is(err, io.EOF) {
			// Not %w: callers take a wrapped io.EOF for a clean end.
			return fmt.Errorf("%s: not an Arrow IPC stream: it ends before its schema", r.name)
		}
		return fmt.Errorf("%s: not an Arrow IPC stream: %w", r.name, err)
	}
	r.ipc = rd
	fields := rd.Schema().Fields()
	var names []string
	if len(opts.Schema) == 0 {
		for i, f := range fields {
			r.order = append(r.order, i)
			names = append(names, f.Name)
		}
	} else {
		for _, c := range opts.Schema {
			fi := findArrowField(fields, c.Name)
			if fi < 0 {
				have := make([]string, len(fields))
				for i, f := range fields {
					have[i] = f.Name
				}
				return fmt.Errorf("%s: no column %q in the Arrow stream (it has: %s)", r.name, c.Name, strings.Join(have, ", "))
			}
			r.order = append(r.order, fi)
			names = append(names, c.Name)
		}
	}
	seen := map[int]bool{}
	for i, fi := range r.order {
		f := fields[fi]
		t, err := rowio.ClickHouseType(f.Type, f.Nullable)
		if err != nil || f.Type.ID() == arrow.NULL {
			// A Null-typed field (pyarrow's type for an all-None column)
			// fits any Nullable column: it claims no type.
			t = ""
		}
		r.cols = append(r.cols, rowio.Column{Name: names[i], Type: t})
		r.text = append(r.text, !rowio.NativeArrow(f.Type))
		if !seen[fi] {
			seen[fi] = true
			r.check = append(r.check, fi)
		}
	}
	r.batch.Cols = make([]rowio.Vector, len(r.cols))
	return nil
}

// findArrowField finds a field by exact, then case-insensitive name.
func findArrowField(fields []arrow.Field, name string) int {
	for i, f := range fields {
		if f.Name == name {
			return i
		}
	}
	for i, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

func (r *arrowReader) Columns() []rowio.Column { return r.cols }

func (r *arrowReader) BytesRead() int64 { return r.cnt.Count() }

// releaseBatch drops what the previous batch pointed to, except the
// record, which may still have rows to deliver.
func (r *arrowReader) releaseBatch() {
	for _, a := range r.made {
		a.Release()
	}
	clear(r.made)
	r.made = r.made[:0]
	for i := range r.batch.Cols {
		r.batch.Cols[i].Arrow = nil
	}
}

func (r *arrowReader) releaseRecord() {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
}

func (r *arrowReader) Next() (*rowio.Batch, error) {
	r.releaseBatch()
	if r.err != nil && r.rec != nil {
		return nil, r.err // a batch that failed: the record is not read on
	}
	if r.rec == nil || r.off >= r.rec.NumRows() {
		r.releaseRecord()
		if r.err != nil {
			return nil, r.err
		}
		if err := r.nextRecord(); err != nil {
			r.err = err
			return nil, err
		}
	}
	n := min(r.rec.NumRows()-r.off, r.batchRows)
	whole := r.off == 0 && n == r.rec.NumRows()
	b := &r.batch
	b.Rows = int(n)
	b.Errors = b.Errors[:0]
	b.Line = b.Line[:0]
	for i := range b.Rows {
		b.Line = append(b.Line, r.row+int64(i)+1)
	}
	for i := range b.Cols {
		a := r.rec.Column(r.order[i])
		if !whole {
			a = array.NewSlice(a, r.off, r.off+n)
			r.made = append(r.made, a)
		}
		if r.text[i] {
			t, _, err := textArray(a, r.limits)
			if err != nil {
				// The slice is released with the batch's others.
				r.err = fmt.Errorf("%s: rows %d to %d, column %q: %w", r.name, r.row+1, r.row+n, r.cols[i].Name, err)
				return nil, r.err
			}
			a = t
			r.made = append(r.made, a)
		}
		b.Cols[i].Arrow = a
	}
	r.off += n
	r.row += n
	return b, nil
}

// nextRecord makes the next non-empty record batch current, or returns
// io.EOF at the end of the stream.
func (r *arrowReader) nextRecord() error {
	for r.ipc.Next() {
		rec := r.ipc.RecordBatch()
		if rec.NumRows() == 0 || len(r.cols) == 0 {
			continue
		}
		for _, fi := range r.check {
			// A field node may declare another length than its record
			// batch (the fuzzer found one): a Null-typed column of 2^41
			// values costs the stream nothing, and its text would.
			if n := rec.Column(fi).Len(); int64(n) != rec.NumRows() {
				return fmt.Errorf("%s: record batch after row %d, column %q: %d values where the record batch has %d rows: the stream is corrupt", r.name, r.row, rec.Schema().Field(fi).Name, n, rec.NumRows())
			}
			if err := validateArray(rec.Column(fi)); err != nil {
				return fmt.Errorf("%s: record batch after row %d, column %q: %w", r.name, r.row, rec.Schema().Field(fi).Name, err)
			}
		}
		// The IPC reader releases its reference on its next Next; ours
		// keeps the arrays valid for as many batches as the record makes.
		rec.Retain()
		r.rec, r.off = rec, 0
		return nil
	}
	if err := r.ipc.Err(); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%s: the Arrow stream is truncated after row %d: %w", r.name, r.row, err)
		}
		return fmt.Errorf("%s: reading the Arrow stream after row %d: %w", r.name, r.row, err)
	}
	if r.file {
		return r.checkFooter()
	}
	// The IPC reader stops at the end-of-stream marker and ignores what
	// follows; a second stream appended to the first (another schema, more
	// rows) would be dropped without a word.
	if _, err := r.in.Peek(1); err == nil {
		return fmt.Errorf("%s: data after the end-of-stream marker of the Arrow stream (an Arrow stream has one schema; send one stream per record pack)", r.name)
	} else if !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: reading the Arrow stream after row %d: %w", r.name, r.row, err)
	}
	return io.EOF
}

// checkFooter reads what follows the stream part of an Arrow file and
// checks that it is a footer: anything else means the file is truncated
// or is not what its magic says.
func (r *arrowReader) checkFooter() error {
	// The footer is flatbuffer metadata like a message's, so the same
	// bound applies.
	tail, err := io.ReadAll(io.LimitReader(r.in, r.lim.maxMeta+1))
	if err != nil {
		return fmt.Errorf("%s: reading the Arrow file footer: %w", r.name, err)
	}
	if int64(len(tail)) > r.lim.maxMeta {
		return fmt.Errorf("%s: the Arrow file is malformed: more than %d bytes follow its stream", r.name, r.lim.maxMeta)
	}
	n := len(tail) - 4 - len(arrowFileMagic)
	if n < 0 || !bytes.HasSuffix(tail, arrowFileMagic) {
		return fmt.Errorf("%s: the Arrow file is truncated or malformed: no footer after its %d rows", r.name, r.row)
	}
	// The footer may follow padding, so its length is at most n.
	if size := int64(binary.LittleEndian.Uint32(tail[n:])); size <= 0 || size > int64(n) {
		return fmt.Errorf("%s: the Arrow file is malformed: its footer length field (%d) does not fit the %d bytes before it", r.name, size, n)
	}
	return io.EOF
}

// validateArray is array.ValidateFull made fit for the inputs it exists
// for, working around two faults of arrow-go v18.9.0: it panics (slice
// bounds) on some corrupt string offsets instead of returning an error,
// and it rejects every Null-typed array the IPC reader builds (the reader
// leaves out the nil validity slot the validator counts on), which would
// refuse pyarrow's all-None columns. A panic only comes from an invalid
// array, so an array that passes is safe to read.
func validateArray(a arrow.Array) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("invalid array: %v", p)
		}
	}()
	d := withNullSlots(a.Data())
	defer d.Release()
	v := array.MakeFromData(d)
	defer v.Release()
	return array.ValidateFull(v)
}

// withNullSlots returns a copy of d (sharing its buffers) in which every
// Null-typed array has the nil buffer slot the validator expects. The
// caller releases it.
func withNullSlots(d arrow.ArrayData) arrow.ArrayData {
	kids := make([]arrow.ArrayData, len(d.Children()))
	for i, k := range d.Children() {
		kids[i] = withNullSlots(k)
	}
	defer func() {
		for _, k := range kids {
			k.Release()
		}
	}()
	bufs := append([]*memory.Buffer(nil), d.Buffers()...)
	if d.DataType().ID() == arrow.NULL && len(bufs) == 0 {
		bufs = []*memory.Buffer{nil}
	}
	out := array.NewData(d.DataType(), d.Len(), bufs, kids, d.NullN(), d.Offset())
	// Dictionary returns a typed nil for arrays without one.
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		fixed := withNullSlots(dict)
		out.SetDictionary(fixed)
		fixed.Release()
	}
	return out
}

func (r *arrowReader) Close() error {
	r.releaseBatch()
	r.releaseRecord()
	if r.ipc != nil {
		r.ipc.Release()
		r.ipc = nil
	}
	if r.err == nil {
		r.err = fmt.Errorf("%s: reader closed", r.name)
	}
	if r.dec != nil {
		err := r.dec.Close()
		r.dec = nil
		return err
	}
	return nil
}

// Limits on one IPC message. arrow-go trusts the counts in a message's
// flatbuffer metadata and allocates by them before looking further (a
// field count of 2^32 in a schema of a few bytes is a fatal out-of-memory,
// not a recoverable panic; a field listed as its own child recurses until
// the stack overflows), so arrowMessages checks them first.
const (
	// arrowMaxDepth is arrow-go's own limit on nested types.
	arrowMaxDepth = 64
	// arrowFirstRead is the most allocated for a message part before its
	// bytes arrive: a larger part grows as they do, so that a few bytes
	// claiming a huge message cost little.
	arrowFirstRead = 1 << 20
	// A record batch may declare at most 8 rows per byte of its (decompressed)
	// body, the densest any column is stored (a non-null Boolean), plus
	// arrowFreeRows: otherwise columns without buffers (the Null type,
	// run-end encoding, structs without fields) would let a few bytes stand
	// for billions of rows.
	arrowFreeRows = 1 << 16
)

// arrowLimits are the bounds on one IPC message, from Limits: the body as
// sent is bounded by MaxArrowMessageBytes (by default arrow-go's own 256
// MiB), the flatbuffer metadata by a quarter of it (arrow-go's 64 MiB),
// the buffers of a compressed body once decompressed by four times it, and
// the fields of a schema, nested ones included, by MaxColumns.
type arrowLimits struct {
	maxMeta, maxBody, maxUncompressed int64
	maxFields                         int
}

func newArrowLimits(l rowio.Limits) arrowLimits {
	return arrowLimits{
		maxMeta:         max(l.MaxArrowMessageBytes/4, 8),
		maxBody:         l.MaxArrowMessageBytes,
		maxUncompressed: 4 * l.MaxArrowMessageBytes,
		maxFields:       l.MaxColumns,
	}
}

// arrowMessages is the ipc.MessageReader under arrowReader: it frames the
// messages as arrow-go's own reader does (continuation marker, metadata
// length, metadata, body; the pre-1.0 framing without the marker too) but
// checks each message's metadata, and a compressed body's declared sizes,
// before arrow-go sees them.
type arrowMessages struct {
	r    io.Reader
	mem  memory.Allocator
	lim  arrowLimits
	refs atomic.Int64
	msg  *ipc.Message // the last message, released by the next
	lay  arrowLayout  // from the schema message
}

func newArrowMessages(r io.Reader, mem memory.Allocator, lim arrowLimits) *arrowMessages {
	m := &arrowMessages{r: r, mem: mem, lim: lim}
	m.refs.Add(1)
	return m
}

func (m *arrowMessages) Retain() { m.refs.Add(1) }

func (m *arrowMessages) Release() {
	if m.refs.Add(-1) == 0 && m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}

// Message returns the next message, or io.EOF at the end-of-stream marker
// or at the end of the input between two messages.
func (m *arrowMessages) Message() (*ipc.Message, error) {
	var word [4]byte
	if _, err := io.ReadFull(m.r, word[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("reading a message header: %w", err)
	}
	size := binary.LittleEndian.Uint32(word[:])
	if size == 0xFFFFFFFF { // continuation marker, then the length
		if _, err := io.ReadFull(m.r, word[:]); err != nil {
			return nil, fmt.Errorf("reading a message length: %w", unexpectedEOF(err))
		}
		size = binary.LittleEndian.Uint32(word[:])
	}
	if size == 0 {
		return nil, io.EOF // the end-of-stream marker
	}
	if size < 8 || int32(size) < 0 {
		return nil, fmt.Errorf("invalid message metadata length %d", int32(size))
	}
	if int64(size) > m.lim.maxMeta {
		return nil, &rowio.LimitError{Limit: "MaxArrowMessageBytes", Value: m.lim.maxBody,
			What: fmt.Sprintf("a message with %s of metadata (at most a quarter of the limit)", rowio.ByteSize(int64(size)))}
	}
	meta := memory.NewResizableBuffer(m.mem)
	defer meta.Release()
	if err := readGrowing(m.r, meta, int(size)); err != nil {
		return nil, fmt.Errorf("reading message metadata: %w", err)
	}
	info, err := checkArrowMessage(meta.Bytes(), m.lim.maxFields, &m.lay)
	if err != nil {
		return nil, fmt.Errorf("invalid message metadata: %w", err)
	}
	if info.bodyLen < 0 {
		return nil, fmt.Errorf("message body length %d is out of range", info.bodyLen)
	}
	if info.bodyLen > m.lim.maxBody {
		return nil, &rowio.LimitError{Limit: "MaxArrowMessageBytes", Value: m.lim.maxBody, What: fmt.Sprintf("a message body of %s", rowio.ByteSize(info.bodyLen))}
	}
	body := memory.NewResizableBuffer(m.mem)
	defer body.Release()
	if err := readGrowing(m.r, body, int(info.bodyLen)); err != nil {
		return nil, fmt.Errorf("reading a message body: %w", err)
	}
	data := info.bodyLen
	if info.compressed {
		n, err := uncompressedSize(meta.Bytes(), info, body.Bytes(), m.lim.maxUncompressed)
		if err != nil {
			return nil, err
		}
		data += n
	}
	if info.rows > 8*data+arrowFreeRows {
		return nil, fmt.Errorf("a record batch of %d rows in %d bytes of data", info.rows, data)
	}
	if m.msg != nil {
		m.msg.Release()
	}
	m.msg = ipc.NewMessage(meta, body)
	return m.msg, nil
}

// readGrowing reads n bytes into buf, growing it as the bytes arrive past
// arrowFirstRead rather than allocating n up front.
func readGrowing(r io.Reader, buf *memory.Buffer, n int) error {
	done := 0
	for size := min(n, arrowFirstRead); ; size = min(2*size, n) {
		buf.Resize(size)
		if _, err := io.ReadFull(r, buf.Bytes()[done:size]); err != nil {
			return unexpectedEOF(err)
		}
		if done = size; done == n {
			return nil
		}
	}
}

// unexpectedEOF: the input ending inside a message is a truncation, not
// the end of the stream.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// arrowMessageInfo is what checkArrowMessage learns of a message.
type arrowMessageInfo struct {
	bodyLen    int64
	rows       int64 // of a record or dictionary batch
	compressed bool
	// buffers is the position in the metadata of the batch's Buffer
	// structs (offset, length: two int64 each), nbuf their count.
	buffers uint32
	nbuf    int
}

// Field slots (vtable offsets) of the Arrow flatbuffer tables read here;
// see format/Message.fbs and format/Schema.fbs of the Arrow project.
const (
	fbMessageVersion     = 4
	fbMessageHeaderType  = 6
	fbMessageHeader      = 8
	fbMessageBodyLength  = 10
	fbMessageMetadata    = 12
	fbSchemaFields       = 6
	fbSchemaMetadata     = 8
	fbFieldTypeType      = 8
	fbFieldType          = 10
	fbFieldDictionary    = 12
	fbFieldChildren      = 14
	fbFieldMetadata      = 16
	fbBatchLength        = 4
	fbBatchNodes         = 6
	fbBatchBuffers       = 8
	fbBatchCompression   = 10
	fbBatchVariadic      = 12
	fbDictionaryID       = 4
	fbDictionaryData     = 6
	fbEncodingID         = 4
	fbUnionMode          = 4
	fbUnionDense         = 1
	fbMetadataV5         = 4
	fbHeaderSchema       = 1
	fbHeaderDictionary   = 2
	fbHeaderRecordBatch  = 3
	fbStructSize         = 16 // FieldNode and Buffer: two int64
	fbCompressionUnknown = -1 // an uncompressed buffer in a compressed body
)

// checkArrowMessage checks the parts of a Message flatbuffer whose counts
// arrow-go allocates by or recurses on: every vector it reads lies inside
// the metadata, a schema has at most maxFields fields nested at most
// arrowMaxDepth deep, and a batch lists at least the field nodes, buffers
// and variadic buffer counts its schema needs (lay, learnt from the schema
// message), which stay within its buffers. Offsets are followed exactly as
// the flatbuffers runtime follows them (uint32 arithmetic that wraps), so
// that the checked positions are the ones arrow-go reads. Reads the checks
// do not cover only make arrow-go panic, which its reader recovers into an
// error.
func checkArrowMessage(meta []byte, maxFields int, lay *arrowLayout) (arrowMessageInfo, error) {
	var info arrowMessageInfo
	b := fb(meta)
	root, ok := b.u32(0)
	if !ok {
		return info, errors.New("too short")
	}
	if err := b.checkTable(root); err != nil {
		return info, err
	}
	if err := b.checkMetadata(root, fbMessageMetadata); err != nil {
		return info, err
	}
	info.bodyLen, _ = b.i64Field(root, fbMessageBodyLength)
	kind, _ := b.u8Field(root, fbMessageHeaderType)
	header, present, err := b.table(root, fbMessageHeader)
	if err != nil || !present {
		return info, err
	}
	if (kind == fbHeaderDictionary || kind == fbHeaderRecordBatch) && !lay.known {
		return info, errors.New("a batch before the schema")
	}
	switch kind {
	case fbHeaderSchema:
		budget := maxFields
		*lay = arrowLayout{known: true}
		err = b.checkFields(header, fbSchemaFields, 1, &budget, &lay.record, lay)
		if errors.Is(err, errTooManyFields) {
			err = &rowio.LimitError{Limit: "MaxColumns", Value: int64(maxFields), What: "a schema with more fields (nested ones included)"}
		}
		if err == nil {
			err = b.checkMetadata(header, fbSchemaMetadata)
		}
	case fbHeaderDictionary:
		id, _ := b.i64Field(header, fbDictionaryID)
		need, ok := lay.dicts[id]
		if !ok {
			return info, fmt.Errorf("a dictionary batch for id %d, which no field of the schema has", id)
		}
		var data uint32
		if data, present, err = b.table(header, fbDictionaryData); err == nil && present {
			// arrow-go reads a dictionary as version 1 metadata: its
			// unions have a validity buffer.
			err = b.checkBatch(data, &info, need, false)
		}
	case fbHeaderRecordBatch:
		version, _ := b.u16Field(root, fbMessageVersion)
		err = b.checkBatch(header, &info, lay.record, version >= fbMetadataV5)
	}
	return info, err
}

// arrowLayout is what a stream's schema says its batches hold: the field
// nodes, buffers and variadic buffer counts of a record batch, and of each
// dictionary batch by its id. arrow-go's loader indexes a batch's vectors
// by the schema without checking their lengths: a batch that lists fewer
// buffers than its schema has makes it take the bytes after the vector for
// buffers (the fuzzer's 4 TB buffer came so).
type arrowLayout struct {
	known  bool
	record arrowNeed
	dicts  map[int64]arrowNeed
}

type arrowNeed struct {
	nodes, buffers, variadics int
	// legacy counts unions and run-end encoded arrays, which have a
	// validity buffer before version 5 metadata.
	legacy int
}

func (n arrowNeed) atLeast(o arrowNeed) arrowNeed {
	return arrowNeed{max(n.nodes, o.nodes), max(n.buffers, o.buffers), max(n.variadics, o.variadics), max(n.legacy, o.legacy)}
}

// addType adds the node and buffers of one field of type t (a flatbuffer
// Type), as arrow-go's loader (arrayLoaderContext.loadArray) reads them;
// its children are added by the caller.
func (b fb) addType(f uint32, need *arrowNeed) error {
	t, err := b.u8Field(f, fbFieldTypeType)
	if err != nil {
		return err
	}
	need.nodes++
	switch t {
	case 1: // Null
	case 2, 3, 6, 7, 8, 9, 10, 11, 18, // Int, FloatingPoint, Bool, Decimal, Date, Time, Timestamp, Interval, Duration
		15, 12, 21, 17: // FixedSizeBinary, List, LargeList, Map
		need.buffers += 2
	case 4, 5, 19, 20, 25, 26: // Binary, Utf8, LargeBinary, LargeUtf8, ListView, LargeListView
		need.buffers += 3
	case 13, 16: // Struct_, FixedSizeList
		need.buffers++
	case 14: // Union: type ids, and offsets when dense
		need.buffers++
		need.legacy++
		typ, present, err := b.table(f, fbFieldType)
		if err != nil {
			return err
		}
		if mode, _ := b.u16Field(typ, fbUnionMode); present && mode == fbUnionDense {
			need.buffers++
		}
	case 22: // RunEndEncoded
		need.legacy++
	case 23, 24: // BinaryView, Utf8View: validity, views, then variadic data buffers
		need.buffers += 2
		need.variadics++
	default:
		return fmt.Errorf("a field of unknown type %d", t)
	}
	return nil
}

var errTooManyFields = errors.New("too many fields")

// checkFields checks the fields in a schema's (or field's) vector slot and
// adds what a batch holds of them to need; a dictionary-encoded field adds
// its indices there and its values to lay's dictionary of its id.
func (b fb) checkFields(table uint32, slot uint16, depth int, budget *int, need *arrowNeed, lay *arrowLayout) error {
	start, n, err := b.vector(table, slot, 4)
	if err != nil || n == 0 {
		return err
	}
	if depth > arrowMaxDepth {
		return fmt.Errorf("fields nested more than %d deep", arrowMaxDepth)
	}
	if *budget -= n; *budget < 0 {
		return errTooManyFields
	}
	for i := range n {
		f, ok := b.indirect(start + uint32(4*i))
		if !ok {
			return errors.New("field offset out of bounds")
		}
		if err := b.checkTable(f); err != nil {
			return err
		}
		if err := b.checkMetadata(f, fbFieldMetadata); err != nil {
			return err
		}
		if _, _, err := b.table(f, fbFieldType); err != nil {
			return err
		}
		enc, dict, err := b.table(f, fbFieldDictionary)
		if err != nil {
			return err
		}
		values := need
		if dict {
			need.nodes++
			need.buffers += 2 // an integer array of indices
			values = &arrowNeed{}
		}
		if err := b.addType(f, values); err != nil {
			return err
		}
		if err := b.checkFields(f, fbFieldChildren, depth+1, budget, values, lay); err != nil {
			return err
		}
		if dict {
			id, _ := b.i64Field(enc, fbEncodingID)
			if lay.dicts == nil {
				lay.dicts = map[int64]arrowNeed{}
			}
			lay.dicts[id] = lay.dicts[id].atLeast(*values)
		}
	}
	return nil
}

// checkMetadata checks a custom_metadata vector of KeyValue tables.
func (b fb) checkMetadata(table uint32, slot uint16) error {
	start, n, err := b.vector(table, slot, 4)
	if err != nil {
		return err
	}
	for i := range n {
		kv, ok := b.indirect(start + uint32(4*i))
		if !ok {
			return errors.New("metadata offset out of bounds")
		}
		if err := b.checkTable(kv); err != nil {
			return err
		}
	}
	return nil
}

// checkBatch checks a RecordBatch table (of a record or dictionary batch)
// against what its schema needs; v5 tells the metadata version (unions and
// run-end encoded arrays have no validity buffer from version 5 on).
func (b fb) checkBatch(batch uint32, info *arrowMessageInfo, need arrowNeed, v5 bool) error {
	if err := b.checkTable(batch); err != nil {
		return err
	}
	info.rows, _ = b.i64Field(batch, fbBatchLength)
	if info.rows < 0 {
		return fmt.Errorf("negative row count %d", info.rows)
	}
	_, nodes, err := b.vector(batch, fbBatchNodes, fbStructSize)
	if err != nil {
		return err
	}
	if info.buffers, info.nbuf, err = b.vector(batch, fbBatchBuffers, fbStructSize); err != nil {
		return err
	}
	if _, info.compressed, err = b.table(batch, fbBatchCompression); err != nil {
		return err
	}
	start, n, err := b.vector(batch, fbBatchVariadic, 8)
	if err != nil {
		return err
	}
	buffers := need.buffers
	if !v5 {
		buffers += need.legacy
	}
	for i := range n {
		v, _ := b.i64(start + uint32(8*i))
		if v < 0 || v > int64(info.nbuf) {
			return fmt.Errorf("variadic buffer count %d for %d buffers", v, info.nbuf)
		}
		if i < need.variadics {
			buffers += int(v)
		}
	}
	switch {
	case nodes < need.nodes:
		return fmt.Errorf("a batch of %d field nodes where its schema has %d", nodes, need.nodes)
	case n < need.variadics:
		return fmt.Errorf("a batch of %d variadic buffer counts where its schema has %d view fields", n, need.variadics)
	case info.nbuf < buffers:
		return fmt.Errorf("a batch of %d buffers where its schema needs %d", info.nbuf, buffers)
	}
	return nil
}

// uncompressedSize adds up the decompressed sizes a compressed body's
// buffers declare (each starts with it as an int64; -1 means stored as is).
func uncompressedSize(meta []byte, info arrowMessageInfo, body []byte, limit int64) (int64, error) {
	b := fb(meta)
	var total int64
	for i := range info.nbuf {
		p := info.buffers + uint32(fbStructSize*i)
		off, _ := b.i64(p)
		n, _ := b.i64(p + 8)
		if n == 0 {
			continue // an empty buffer: arrow-go reads nothing
		}
		// arrow-go slices the body by capacity, not length, and reads
		// the 8-byte prefix of a shorter buffer from whatever follows it
		// (the fuzzer found a 4 TB size read so): a compressed buffer is
		// its prefix at least, inside the body.
		if n < 8 || off < 0 || off > int64(len(body))-n {
			return 0, fmt.Errorf("a compressed buffer of %d bytes at offset %d of a %d-byte body", n, off, len(body))
		}
		size := int64(binary.LittleEndian.Uint64(body[off:]))
		if size == fbCompressionUnknown {
			continue
		}
		if size < 0 {
			return 0, fmt.Errorf("a compressed buffer declares %d bytes", size)
		}
		if size > limit-total {
			return 0, &rowio.LimitError{Limit: "MaxArrowMessageBytes", Value: limit / 4, What: "compressed buffers that decompress to more than four times the limit"}
		}
		total += size
	}
	return total, nil
}

// fb is flatbuffer metadata, read with bounds checks.
type fb []byte

func (b fb) u32(p uint32) (uint32, bool) {
	if uint64(p)+4 > uint64(len(b)) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[p:]), true
}

func (b fb) u16(p uint32) (uint16, bool) {
	if uint64(p)+2 > uint64(len(b)) {
		return 0, false
	}
	return binary.LittleEndian.Uint16(b[p:]), true
}

func (b fb) i64(p uint32) (int64, bool) {
	if uint64(p)+8 > uint64(len(b)) {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b[p:])), true
}

// indirect follows the uoffset stored at p.
func (b fb) indirect(p uint32) (uint32, bool) {
	off, ok := b.u32(p)
	return p + off, ok
}

// checkTable checks that a table's vtable lies inside the metadata.
func (b fb) checkTable(t uint32) error {
	soff, ok := b.u32(t)
	if !ok {
		return errors.New("table out of bounds")
	}
	vt := uint32(int32(t) - int32(soff))
	size, ok := b.u16(vt)
	if !ok || uint64(vt)+uint64(size) > uint64(len(b)) {
		return errors.New("vtable out of bounds")
	}
	return nil
}

// field returns the position of a table's field, or 0 if it is absent.
func (b fb) field(t uint32, slot uint16) (uint32, error) {
	soff, ok := b.u32(t)
	if !ok {
		return 0, errors.New("table out of bounds")
	}
	vt := uint32(int32(t) - int32(soff))
	size, ok := b.u16(vt)
	if !ok {
		return 0, errors.New("vtable out of bounds")
	}
	if slot >= size {
		return 0, nil
	}
	off, ok := b.u16(vt + uint32(slot))
	if !ok {
		return 0, errors.New("vtable out of bounds")
	}
	if off == 0 {
		return 0, nil
	}
	return t + uint32(off), nil
}

func (b fb) i64Field(t uint32, slot uint16) (int64, error) {
	p, err := b.field(t, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	v, _ := b.i64(p)
	return v, nil
}

func (b fb) u16Field(t uint32, slot uint16) (uint16, error) {
	p, err := b.field(t, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	v, _ := b.u16(p)
	return v, nil
}

func (b fb) u8Field(t uint32, slot uint16) (byte, error) {
	p, err := b.field(t, slot)
	if err != nil || p == 0 || int(p) >= len(b) {
		return 0, err
	}
	return b[p], nil
}

// table follows a table (or union) field.
func (b fb) table(t uint32, slot uint16) (uint32, bool, error) {
	p, err := b.field(t, slot)
	if err != nil || p == 0 {
		return 0, false, err
	}
	sub, ok := b.indirect(p)
	if !ok {
		return 0, false, errors.New("table offset out of bounds")
	}
	return sub, true, b.checkTable(sub)
}

// vector follows a vector field and checks that its n elements of size
// elem lie inside the metadata.
func (b fb) vector(t uint32, slot uint16, elem int) (start uint32, n int, err error) {
	p, err := b.field(t, slot)
	if err != nil || p == 0 {
		return 0, 0, err
	}
	v, ok := b.indirect(p)
	if !ok {
		return 0, 0, errors.New("vector offset out of bounds")
	}
	l, ok := b.u32(v)
	if !ok || uint64(v)+4+uint64(l)*uint64(elem) > uint64(len(b)) {
		return 0, 0, fmt.Errorf("a vector of %d elements overruns the %d bytes of metadata", l, len(b))
	}
	return v + 4, int(l), nil
}
