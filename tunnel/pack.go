package tunnel

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/lakepipe/lakepipe/internal/codec"
)

// Defaults of RecordPackOptions and FlushOption.
const (
	// DefaultFlushThreshold is the estimated pack size at which Append
	// flushes: 64 MiB, the ClickZetta Lakehouse documentation's advice against many small flushes.
	DefaultFlushThreshold = 64 << 20
	// MaxFlushThreshold bounds FlushThreshold: one flush is one Arrow
	// record batch, whose string columns hold at most 2 GiB.
	MaxFlushThreshold = 1 << 30
	// DefaultFlushTimeout bounds a flush, retries included.
	DefaultFlushTimeout = 2 * time.Minute
)

// RecordPackOptions configures a RecordPack. The zero value means every
// default.
type RecordPackOptions struct {
	// Compression is the Content-Encoding of flush bodies (identity,
	// deflate/zlib, snappy, lz4); "" is the session's (SetCompressor),
	// whose default is DefaultCompression.
	Compression string
	// FlushThreshold is the estimated size in bytes of pending rows (as
	// Arrow holds them, before compression) at which Append flushes the
	// pack before adding its row. 0 is DefaultFlushThreshold. A negative
	// value turns automatic flushes off, except at the two caps that
	// always apply: the server's MaxFlushBytes (beyond which it would
	// refuse the flush) and MaxFlushThreshold.
	FlushThreshold int64
	// FlushTimeout bounds automatic flushes and Flush calls without a
	// FlushOption; 0 is DefaultFlushTimeout.
	FlushTimeout time.Duration
	// OnFlush, if set, is called with the result of every successful
	// automatic flush, on the goroutine that called Append (or Flush,
	// for a background flush it waited for). Explicit Flush calls return
	// their result instead.
	OnFlush func(FlushResult)
	// BackgroundFlush makes automatic flushes run on another goroutine
	// while Append fills the pack again, so that building rows and
	// writing them overlap. At most one flush of a pack runs at a time
	// and packs still flush in order: when the pack reaches its threshold
	// again, Append first waits for the previous flush, and if that
	// failed returns its error without adding the row (the failed rows
	// stay, as with any failed flush). Flush and Discard wait for it too.
	// A pack then holds up to twice FlushThreshold in memory.
	BackgroundFlush bool
}

// FlushOption configures one Flush, as the Java SDK's FlushOption does.
type FlushOption struct {
	// Timeout bounds the flush, retries included (0: the pack's
	// FlushTimeout). The server is told the time left with every attempt
	// and writes nothing from an attempt it cannot finish in time.
	Timeout time.Duration
}

// RecordPack accumulates rows of a session in Arrow builders (one per
// column) and writes them with Flush. Rows become visible to queries when
// a Flush (or an automatic flush of Append) returns without error; each
// flush is written exactly once however often it is retried, and rows of
// one pack are written in the order they were appended.
//
// After a successful flush the pack is empty and is reused. After a
// failed flush its rows stay in the pack, still under the same flush id,
// and the next Flush (or Append) sends them again before any newer rows:
// retrying after an ambiguous failure (a timeout, a lost answer) cannot
// write them twice. Discard drops them instead. A schema mismatch is
// different: the pack is then unusable and every call returns the error
// (errors.Is(err, ErrSchemaMismatch)); build a new session and pack and
// write the rows again.
//
// A RecordPack is not safe for concurrent use; use one pack per
// goroutine (a session may have any number of packs).
type RecordPack struct {
	s         *StreamUploadSession
	l         *layout
	comp      string
	threshold int64
	timeout   time.Duration
	onFlush   func(FlushResult)

	id  string // uuid
	seq uint64 // flushes sealed so far

	mem      *bufferPool
	builders []array.Builder // per field of l.schema
	rows     int64
	size     int64
	last     []int // after a flush: rows, then string data bytes per field, to presize
	sized    bool  // the builders were sized for this pack's rows
	autoOff  bool  // FlushThreshold < 0
	scratch  *Record

	pending *sealedFlush // a failed flush, sent again first; or the one in flight
	broken  error        // a schema mismatch: the pack is unusable
	bw      *bufio.Writer

	background bool
	inflight   *backgroundFlush // sending pending, when not nil
}

// backgroundFlush is an automatic flush running on its own goroutine.
type backgroundFlush struct {
	done chan struct{}
	res  FlushResult
	err  error
}

// sealedFlush is a batch of rows with its flush id, kept until the server
// accepts it.
type sealedFlush struct {
	id string
	// attempts counts the requests made for it, across Flush calls: the
	// server tells attempts apart by their number.
	attempts int
	rec      arrow.RecordBatch
	rows     int64
	size     int64
}

// NewRecordPack returns an empty pack of the session. Only the first
// options argument is used. It fails when the compression is unknown or
// the server does not accept it.
func (s *StreamUploadSession) NewRecordPack(opts ...RecordPackOptions) (*RecordPack, error) {
	var o RecordPackOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	comp := o.Compression
	if comp == "" {
		comp = s.compression
	}
	comp, err := codec.Canonical(comp)
	if err != nil {
		return nil, fmt.Errorf("tunnel: new record pack: %w", err)
	}
	if len(s.info.Compressions) > 0 && !slices.ContainsFunc(s.info.Compressions, func(c string) bool {
		cc, err := codec.Canonical(c)
		return err == nil && cc == comp
	}) {
		return nil, fmt.Errorf("tunnel: new record pack: the server does not accept compression %s (it accepts %v)", comp, s.info.Compressions)
	}
	p := &RecordPack{
		s:          s,
		l:          s.l,
		comp:       comp,
		threshold:  o.FlushThreshold,
		timeout:    o.FlushTimeout,
		onFlush:    o.OnFlush,
		background: o.BackgroundFlush,
		id:         newUUID(),
		mem:        &bufferPool{},
		scratch:    newRecord(s.l),
	}
	switch {
	case p.threshold == 0:
		p.threshold = DefaultFlushThreshold
	case p.threshold < 0:
		p.threshold, p.autoOff = math.MaxInt64, true
	}
	// Leave the server's limit some room: the estimate does not count
	// IPC metadata and padding, and a pack flushes one row past it.
	if max := s.info.MaxFlushBytes; max > 0 && p.threshold > max-max/16 {
		p.threshold = max - max/16
	}
	p.threshold = min(p.threshold, MaxFlushThreshold)
	if p.timeout <= 0 {
		p.timeout = DefaultFlushTimeout
	}
	p.builders = make([]array.Builder, len(s.l.sent))
	for f, si := range s.l.sent {
		p.builders[f] = array.NewBuilder(p.mem, s.l.specs[si].dt)
	}
	return p, nil
}

// OpenRecordPackWriter is NewRecordPack, named as in the Go SDK.
func (s *StreamUploadSession) OpenRecordPackWriter(opts ...RecordPackOptions) (*RecordPack, error) {
	return s.NewRecordPack(opts...)
}

// ID returns the pack's id, the first part of its flush ids.
func (p *RecordPack) ID() string { return p.id }

// Compression returns the Content-Encoding of the pack's flushes.
func (p *RecordPack) Compression() string { return p.comp }

// RecordCount returns the number of rows not yet written, those of a
// failed flush included.
func (p *RecordPack) RecordCount() int64 {
	n := p.rows
	if p.pending != nil {
		n += p.pending.rows
	}
	return n
}

// Size returns the estimated size in bytes of the rows not yet written
// (as Arrow holds them, before compression).
func (p *RecordPack) Size() int64 {
	n := p.size
	if p.pending != nil {
		n += p.pending.size
	}
	return n
}

// Append adds a copy of record r, a record of the pack's session, to the
// pack. When the pack has reached its flush threshold, Append first
// flushes it (with BackgroundFlush: waits for the previous background
// flush, then starts one); if that flush fails Append returns the error
// and does not add r (the pack keeps its rows, see RecordPack). A record
// with a setter error is refused with that error.
func (p *RecordPack) Append(r *Record) error {
	if p.broken != nil {
		return p.broken
	}
	if r == nil || r.l != p.l {
		return errors.New("tunnel: append: the record is not one of the pack's session (use session.NewRecord)")
	}
	if r.err != nil {
		return r.err
	}
	if err := p.autoFlush(); err != nil {
		return err
	}
	p.appendValues(r.vals)
	return nil
}

// AppendRow adds one row given as values in the order of the session's
// Schema(), each as Record.Set takes it (nil for NULL), like the Go SDK's
// pack.Append([]data.Data{…}). A bad value is an error and adds nothing;
// flushing is as for Append.
func (p *RecordPack) AppendRow(vals ...any) error {
	if p.broken != nil {
		return p.broken
	}
	sc := p.scratch
	if len(vals) != len(sc.vals) {
		return fmt.Errorf("tunnel: append row: %d values for %d columns", len(vals), len(sc.vals))
	}
	for i, v := range vals {
		if err := sc.putAny(i, v); err != nil {
			sc.Reset()
			return err
		}
	}
	if err := p.autoFlush(); err != nil {
		sc.Reset()
		return err
	}
	p.appendValues(sc.vals)
	clear(sc.vals) // drop references to the caller's strings
	return nil
}

func (p *RecordPack) autoFlush() error {
	if !p.background {
		if p.Size() < p.threshold {
			return nil
		}
		res, err := p.FlushContext(context.Background())
		if err != nil {
			return fmt.Errorf("tunnel: automatic flush: %w", err)
		}
		if p.onFlush != nil {
			p.onFlush(res)
		}
		return nil
	}
	if p.size < p.threshold {
		return nil
	}
	if err := p.wait(); err != nil {
		return fmt.Errorf("tunnel: automatic flush: %w", err)
	}
	if p.pending == nil {
		p.seal()
	}
	// The goroutine owns p.pending (read only) and p.bw until done.
	bg := &backgroundFlush{done: make(chan struct{})}
	p.inflight = bg
	go func(s *sealedFlush) {
		defer close(bg.done)
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		defer cancel()
		bg.res, bg.err = p.send(ctx, s)
	}(p.pending)
	return nil
}

// wait waits for the background flush, if one runs, and settles it as
// FlushContext settles its own.
func (p *RecordPack) wait() error {
	bg := p.inflight
	if bg == nil {
		return nil
	}
	<-bg.done
	p.inflight = nil
	if bg.err != nil {
		if IsSchemaMismatch(bg.err) {
			p.breakDown(bg.err)
			return p.broken
		}
		return bg.err
	}
	p.pending.rec.Release()
	p.pending = nil
	if p.onFlush != nil {
		p.onFlush(bg.res)
	}
	return nil
}

func (p *RecordPack) appendValues(vals []value) {
	if p.rows == 0 && p.last != nil {
		p.presizeLikeLast()
	}
	size := p.l.rowBitmaps
	for f, si := range p.l.sent {
		v, sp, b := &vals[si], &p.l.specs[si], p.builders[f]
		size += sp.fixed
		if v.state != isSet {
			if sp.nullable {
				b.AppendNull()
			} else {
				b.AppendEmptyValue()
			}
			continue
		}
		switch sp.kind {
		case kindInt:
			switch sp.bits {
			case 64:
				b.(*array.Int64Builder).Append(int64(v.n))
			case 32:
				b.(*array.Int32Builder).Append(int32(v.n))
			case 16:
				b.(*array.Int16Builder).Append(int16(v.n))
			default:
				b.(*array.Int8Builder).Append(int8(v.n))
			}
		case kindUint:
			switch sp.bits {
			case 64:
				b.(*array.Uint64Builder).Append(v.n)
			case 32:
				b.(*array.Uint32Builder).Append(uint32(v.n))
			case 16:
				b.(*array.Uint16Builder).Append(uint16(v.n))
			default:
				b.(*array.Uint8Builder).Append(uint8(v.n))
			}
		case kindFloat:
			if sp.bits == 64 {
				b.(*array.Float64Builder).Append(math.Float64frombits(v.n))
			} else {
				b.(*array.Float32Builder).Append(float32(math.Float64frombits(v.n)))
			}
		case kindString:
			sb := b.(*array.StringBuilder)
			if v.b != nil {
				sb.BinaryBuilder.Append(v.b)
				size += int64(len(v.b))
			} else {
				sb.BinaryBuilder.Append(stringBytes(v.s))
				size += int64(len(v.s))
			}
		case kindBool:
			b.(*array.BooleanBuilder).Append(v.n != 0)
		case kindDecimal:
			b.(*array.Decimal128Builder).Append(v.decimal())
		case kindDate:
			b.(*array.Date32Builder).Append(arrow.Date32(int32(v.n)))
		case kindTimestamp:
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(int64(v.n)))
		}
	}
	p.rows++
	p.size += size
	if p.rows == presizeAfter && !p.sized && !p.autoOff {
		p.presizeForThreshold()
	}
}

// Builders grow by doubling, copying what they hold each time; on the
// virtual machines we run on, the fresh memory each copy touches costs
// more than the copy. So the builders are sized once per pack: like the
// last flush when there was one, else from the first rows' average size
// and the flush threshold. A pack bigger than its estimate still grows.
const presizeAfter = 4096

func (p *RecordPack) presizeLikeLast() {
	rows := p.last[0] + p.last[0]/16
	for f, b := range p.builders {
		if b.Cap() < rows {
			b.Resize(rows)
		}
		if sb, ok := b.(*array.StringBuilder); ok {
			if n := p.last[1+f] + p.last[1+f]/16; sb.DataCap() < n {
				sb.ReserveData(n - sb.DataLen())
			}
		}
	}
	p.last, p.sized = nil, true
}

func (p *RecordPack) presizeForThreshold() {
	p.sized = true
	rows := p.threshold / max(1, p.size/p.rows)
	rows += rows / 16
	if rows <= p.rows || rows > math.MaxInt32 {
		return
	}
	for _, b := range p.builders {
		if int64(b.Cap()) < rows {
			b.Resize(int(rows))
		}
		if sb, ok := b.(*array.StringBuilder); ok {
			if n := int64(sb.DataLen()) * rows / p.rows; int64(sb.DataCap()) < n {
				sb.ReserveData(int(n) - sb.DataLen())
			}
		}
	}
}

// Flush writes the pack's rows (FlushContext with a background context).
func (p *RecordPack) Flush(opts ...FlushOption) (FlushResult, error) {
	return p.FlushContext(context.Background(), opts...)
}

// FlushContext writes the pack's rows and returns when they are visible:
// the rows of an earlier failed flush first, under their old flush id,
// then the rows appended since, as one Arrow IPC stream under a new one.
// Connection errors, 429 and 5xx answers are retried with backoff until
// the timeout (FlushOption, else the pack's FlushTimeout) or ctx ends.
// The result counts the rows and body bytes written (on error, those
// written before the failure); its TraceID is the last flush's. A pack
// without rows returns a zero result without a request.
func (p *RecordPack) FlushContext(ctx context.Context, opts ...FlushOption) (FlushResult, error) {
	var total FlushResult
	if p.broken != nil {
		return total, p.broken
	}
	if err := p.wait(); err != nil {
		return total, err
	}
	if p.pending == nil && p.rows == 0 {
		return total, nil
	}
	timeout := p.timeout
	if len(opts) > 0 && opts[0].Timeout > 0 {
		timeout = opts[0].Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if p.pending == nil {
			if p.rows == 0 {
				return total, nil
			}
			p.seal()
		}
		res, err := p.send(ctx, p.pending)
		if err != nil {
			if IsSchemaMismatch(err) {
				p.breakDown(err)
				return total, p.broken
			}
			return total, err
		}
		total.TraceID = res.TraceID
		total.RecordCount += res.RecordCount
		total.FlushSize += res.FlushSize
		p.pending.rec.Release()
		p.pending = nil
	}
}

// Discard drops the rows not yet written, those of a failed flush
// included (which the server may or may not have written). The pack can
// be used again, unless it saw a schema mismatch.
func (p *RecordPack) Discard() {
	_ = p.wait() // its error is dropped with its rows
	if p.pending != nil {
		p.pending.rec.Release()
		p.pending = nil
	}
	for _, b := range p.builders {
		if b.Len() > 0 {
			b.NewArray().Release()
		}
	}
	p.rows, p.size = 0, 0
}

// breakDown makes the pack unusable after a schema mismatch.
func (p *RecordPack) breakDown(err error) {
	p.Discard()
	for _, b := range p.builders {
		b.Release()
	}
	p.builders = nil
	p.mem.drain()
	p.broken = fmt.Errorf("tunnel: pack %s is unusable, rebuild the session: %w", p.id, err)
}

// seal moves the builders' rows into a record batch under a new flush id.
func (p *RecordPack) seal() {
	p.seq++
	cols := make([]arrow.Array, len(p.builders))
	last := make([]int, 1+len(p.builders))
	last[0] = int(p.rows)
	for f, b := range p.builders {
		if sb, ok := b.(*array.StringBuilder); ok {
			last[1+f] = sb.DataLen()
		}
		cols[f] = b.NewArray()
	}
	rec := array.NewRecordBatch(p.l.schema, cols, p.rows)
	for _, c := range cols {
		c.Release()
	}
	p.pending = &sealedFlush{
		id:   p.id + "-" + strconv.FormatUint(p.seq, 10),
		rec:  rec,
		rows: p.rows,
		size: p.size,
	}
	p.last, p.sized = last, false
	p.rows, p.size = 0, 0
}

// Retry backoff of flushes: 100 ms doubling to 5 s, ±25 % jitter.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
)

// send writes one sealed flush, retrying transient failures until ctx
// ends. Every attempt carries the same flush id.
func (p *RecordPack) send(ctx context.Context, s *sealedFlush) (FlushResult, error) {
	backoff := backoffMin
	var last error // of the previous attempt
	for attempt := 1; ; attempt++ {
		res, retryAfter, err := p.attempt(ctx, s)
		if err == nil {
			return res, nil
		}
		if retryAfter < 0 {
			if last != nil && ctx.Err() != nil {
				return FlushResult{}, fmt.Errorf("tunnel: flush %s: %w after %d attempts: %w", s.id, ctx.Err(), attempt, last)
			}
			return FlushResult{}, fmt.Errorf("tunnel: flush %s: %w", s.id, err)
		}
		last = err
		wait := time.Duration(float64(backoff) * (0.75 + 0.5*mrand.Float64()))
		if retryAfter > wait {
			wait = retryAfter
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return FlushResult{}, fmt.Errorf("tunnel: flush %s: gave up after %d attempts: %w", s.id, attempt, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return FlushResult{}, fmt.Errorf("tunnel: flush %s: %w after %d attempts: %w", s.id, ctx.Err(), attempt, err)
		case <-t.C:
		}
		backoff = min(2*backoff, backoffMax)
	}
}

var errAbandoned = errors.New("request body abandoned")

// attempt makes one flush request, streaming the encoded, compressed body
// into it. retryAfter is negative when the error is permanent, else the
// wait the server asked for (0 if none).
func (p *RecordPack) attempt(ctx context.Context, s *sealedFlush) (res FlushResult, retryAfter time.Duration, err error) {
	c := p.s.c
	if err := ctx.Err(); err != nil {
		return res, -1, err
	}
	pr, pw := io.Pipe()
	body := &countingWriter{w: pw}
	encoded := make(chan error, 1)
	go func() {
		err := p.encode(body, s.rec)
		pw.CloseWithError(err)
		encoded <- err
	}()
	req, err := c.newRequest(ctx, http.MethodPost, c.streamURL(p.s.info.ID, "/flush"), pr)
	if err != nil {
		pr.CloseWithError(errAbandoned)
		<-encoded
		return res, -1, err
	}
	req.Header.Set("Content-Type", ContentTypeArrow)
	req.Header.Set("Content-Encoding", p.comp)
	req.Header.Set(HeaderFlushID, s.id)
	s.attempts++
	req.Header.Set(HeaderFlushAttempt, strconv.Itoa(s.attempts))
	req.Header.Set(HeaderRecordCount, strconv.FormatInt(s.rows, 10))
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set(HeaderTimeout, strconv.FormatInt(max(1, time.Until(dl).Milliseconds()), 10))
	}
	resp, err := c.hc.Do(req)
	pr.CloseWithError(errAbandoned) // stops the encoder if the body was not read to its end
	encErr := <-encoded
	if encErr != nil && !errors.Is(encErr, errAbandoned) && !errors.Is(encErr, io.ErrClosedPipe) {
		if resp != nil {
			drainClose(resp.Body)
		}
		return res, -1, fmt.Errorf("encode record pack: %w", encErr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, -1, ctx.Err()
		}
		return res, 0, c.transportError(err)
	}
	defer drainClose(resp.Body)
	if resp.StatusCode/100 != 2 {
		apiErr := c.answerError(resp)
		if !apiErr.Temporary() {
			return res, -1, apiErr
		}
		return res, retryAfterHeader(resp), apiErr
	}
	var fr FlushResult
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&fr) // the counts are ours
	res = FlushResult{TraceID: fr.TraceID, RecordCount: s.rows, FlushSize: body.n}
	if res.TraceID == "" {
		res.TraceID = resp.Header.Get(HeaderTraceID)
	}
	return res, 0, nil
}

// encode writes rec as one Arrow IPC stream, compressed, to w.
func (p *RecordPack) encode(w io.Writer, rec arrow.RecordBatch) error {
	if p.bw == nil {
		p.bw = bufio.NewWriterSize(w, 256<<10)
	} else {
		p.bw.Reset(w)
	}
	zw, err := codec.NewWriter(p.comp, p.bw)
	if err != nil {
		return err
	}
	iw := ipc.NewWriter(zw, ipc.WithSchema(p.l.schema), ipc.WithAllocator(p.mem))
	if err := iw.Write(rec); err != nil {
		iw.Close()
		zw.Close()
		return err
	}
	if err := iw.Close(); err != nil {
		zw.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return p.bw.Flush()
}

func retryAfterHeader(resp *http.Response) time.Duration {
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return min(time.Duration(s)*time.Second, time.Minute)
	}
	return 0
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func newUUID() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}
