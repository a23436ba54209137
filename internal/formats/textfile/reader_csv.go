package textfile

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

// span is one field of the record being scanned: buf[s:e], without the
// enclosing quotes.
type span struct {
	s, e  int
	flags uint8
}

const (
	spanQuoted  uint8 = 1 << iota // the field was quoted: never NULL
	spanEscaped                   // holds "" or escape sequences to undo
)

type scanResult uint8

const (
	scanOK           scanResult = iota
	scanMore                    // the record runs past the buffered data
	scanBadQuote                // a byte other than a separator follows a closing quote
	scanUnterminated            // a quoted field runs to the end of the input
)

type csvReader struct {
	name  string
	cnt   *rowio.CountingReader
	dec   *rowio.Decompressor
	in    *rowio.ChunkBuf
	opts  rowio.Options
	cols  []rowio.Column
	ncols int

	delim, quote, escape byte
	quoting              bool
	// special marks the bytes that end an unquoted field.
	special [256]bool

	line     int64 // line number of in.buf[in.pos]
	skipping bool  // discarding the rest of an overlong line
	spans    []span
	// maxLine and maxCols are Limits.MaxLineBytes and MaxColumns; a
	// record's fields past maxCols are counted in extra, not kept, so a
	// line of commas costs no more than its bytes.
	maxLine, maxCols int
	extra            int
	batch            rowio.Batch
}

func NewCSVReader(name string, cnt *rowio.CountingReader, dec *rowio.Decompressor, opts rowio.Options) (*csvReader, error) {
	r := &csvReader{
		name:    name,
		cnt:     cnt,
		dec:     dec,
		in:      rowio.NewChunkBufFor(dec, dec.Size),
		opts:    opts,
		delim:   opts.DelimiterByte(),
		quote:   opts.QuoteByte(),
		escape:  opts.Escape,
		quoting: !opts.NoQuote,
		line:    1,
		maxLine: int(min(opts.Limits.MaxLineBytes, math.MaxInt32)),
		maxCols: opts.Limits.MaxColumns,
	}
	if r.escape == r.quote || !r.quoting {
		r.escape = 0
	}
	r.special[r.delim] = true
	r.special['\n'] = true
	r.special['\r'] = true
	if err := r.start(); err != nil {
		return nil, err
	}
	return r, nil
}

// start consumes the BOM, skipped lines and header, and settles the
// columns.
func (r *csvReader) start() error {
	in := r.in
	for in.End-in.Pos < 3 && in.Fill() {
	}
	if in.Err != nil {
		return fmt.Errorf("%s: %w", r.name, in.Err)
	}
	if bytes.HasPrefix(in.Buf[in.Pos:in.End], []byte("\xef\xbb\xbf")) {
		in.Pos += 3
	}
	for range r.opts.SkipRows {
		if !r.skipLine() {
			break
		}
	}
	if in.Err != nil {
		return fmt.Errorf("%s: %w", r.name, in.Err)
	}

	var header []string
	if r.opts.Header {
		res, next, lines := r.scanFirst()
		if res == scanOK && r.extra > 0 {
			return fmt.Errorf("%s: %w", r.name, r.tooManyFields())
		}
		switch res {
		case scanOK:
			header = make([]string, len(r.spans))
			for i, sp := range r.spans {
				header[i] = string(r.unescaped(sp))
				if header[i] == "" {
					header[i] = "f" + strconv.Itoa(i)
				}
			}
			in.Pos = next
			r.line += int64(lines)
		default:
			if in.Err != nil {
				return fmt.Errorf("%s: %w", r.name, in.Err)
			}
			return fmt.Errorf("%s: line %d: malformed header: %s", r.name, r.line, r.scanMessage(res))
		}
	}

	switch {
	case len(r.opts.Schema) > r.maxCols || len(header) > r.maxCols:
		return fmt.Errorf("%s: %w", r.name, r.tooManyFields())
	case len(r.opts.Schema) > 0:
		r.cols = append([]rowio.Column(nil), r.opts.Schema...)
	case header != nil:
		r.cols = make([]rowio.Column, len(header))
		for i, h := range header {
			r.cols[i] = rowio.Column{Name: h}
		}
	default:
		// Peek at the first record for the field count without consuming
		// it: scanning does not modify the buffer.
		res, _, _ := r.scanFirst()
		if in.Err != nil {
			return fmt.Errorf("%s: %w", r.name, in.Err)
		}
		n := len(r.spans)
		if res == scanUnterminated || res == scanMore {
			n++
		}
		if r.extra > 0 || n > r.maxCols {
			return fmt.Errorf("%s: the first record: %w", r.name, r.tooManyFields())
		}
		if in.Pos >= in.End && in.AtEOF {
			n = 0 // empty file
		}
		r.cols = make([]rowio.Column, n)
		for i := range r.cols {
			r.cols[i] = rowio.Column{Name: "f" + strconv.Itoa(i)}
		}
	}
	r.ncols = len(r.cols)
	r.batch.Cols = make([]rowio.Vector, r.ncols)
	return nil
}

// scanFirst skips blank lines and scans the next record, reading as much
// as it takes, without consuming the record.
func (r *csvReader) scanFirst() (res scanResult, next, lines int) {
	in := r.in
	for {
		if !r.skipBlank() {
			r.spans = r.spans[:0]
			return scanOK, in.Pos, 0
		}
		next, lines, res = r.scan(in.Buf[:in.End], in.Pos, in.AtEOF)
		if res != scanMore {
			return res, next, lines
		}
		if in.End-in.Pos > r.maxLine || !in.Fill() && in.Err != nil {
			return scanMore, 0, 0
		}
	}
}

// skipBlank consumes empty lines; it reports whether there is data left.
func (r *csvReader) skipBlank() bool {
	in := r.in
	for {
		if in.Pos >= in.End {
			if !in.Fill() {
				return false
			}
			continue
		}
		switch in.Buf[in.Pos] {
		case '\n':
			in.Pos++
			r.line++
			continue
		case '\r':
			if in.Pos+1 >= in.End {
				if in.Fill() {
					continue
				}
				if in.Err == nil {
					in.Pos++ // a lone CR ending the file
				}
				return false
			}
			if in.Buf[in.Pos+1] == '\n' {
				in.Pos += 2
				r.line++
				continue
			}
		}
		return true
	}
}

// skipLine consumes input up to and including the next newline, reporting
// whether one was found.
func (r *csvReader) skipLine() bool {
	if !r.in.SkipLine() {
		return false
	}
	r.line++
	return true
}

func (r *csvReader) Columns() []rowio.Column { return r.cols }

func (r *csvReader) BytesRead() int64 { return r.cnt.Count() }

func (r *csvReader) Close() error { return r.dec.Close() }

// tooManyFields is the error of a record with more than maxCols fields.
func (r *csvReader) tooManyFields() *rowio.LimitError {
	return &rowio.LimitError{Limit: "MaxColumns", Value: int64(r.maxCols), What: fmt.Sprintf("a record of %d fields", r.maxCols+max(r.extra, 1))}
}

func (r *csvReader) scanMessage(res scanResult) string {
	switch res {
	case scanBadQuote:
		return "unexpected character after a closing quote"
	case scanUnterminated:
		return "unterminated quoted field"
	case scanMore:
		return fmt.Sprintf("record longer than %s (LAKEPIPE_MAX_LINE_BYTES; an unterminated quoted field?)", rowio.ByteSize(int64(r.maxLine)))
	}
	return ""
}

func (r *csvReader) Next() (*rowio.Batch, error) {
	in := r.in
	in.Release()
	b := &r.batch
	b.Rows = 0
	b.Line = b.Line[:0]
	clear(b.Errors)
	b.Errors = b.Errors[:0]
	for i := range b.Cols {
		v := &b.Cols[i]
		v.Text = v.Text[:0]
		v.Null = v.Null[:0]
	}
	limit := r.opts.BatchRows

	// Errors count towards the limit too, so that a file of garbage
	// cannot grow one batch without bound.
	for b.Rows+len(b.Errors) < limit {
		if r.skipping {
			if j := bytes.IndexByte(in.Buf[in.Pos:in.End], '\n'); j >= 0 {
				in.Pos += j + 1
				r.line++
				r.skipping = false
				continue
			}
			in.Pos = in.End
			if in.Owned && b.Rows > 0 {
				// Reading on would pin another chunk per read; finish the
				// batch so the chunk can be reused.
				break
			}
			if !in.Fill() {
				break
			}
			continue
		}
		if in.Pos >= in.End {
			if !in.Fill() {
				break
			}
			continue
		}
		if c := in.Buf[in.Pos]; c == '\n' || c == '\r' {
			// skipBlank may stop at a lone CR, which is data: no continue.
			if !r.skipBlank() {
				break
			}
		}
		next, lines, res := r.scan(in.Buf[:in.End], in.Pos, in.AtEOF)
		switch res {
		case scanOK:
			// The buffer may hold more than maxLine when the record is
			// found, so the limit is checked here too, to hold exactly.
			if next-in.Pos > r.maxLine {
				b.Errors = append(b.Errors, rowio.RowError{Line: r.line, Msg: r.scanMessage(scanMore)})
			} else if r.extra > 0 {
				b.Errors = append(b.Errors, rowio.RowError{Line: r.line, Msg: r.tooManyFields().Error()})
			} else if len(r.spans) != r.ncols {
				b.Errors = append(b.Errors, rowio.RowError{Line: r.line, Msg: fmt.Sprintf("expected %d fields, got %d", r.ncols, len(r.spans))})
			} else {
				r.addRow(b)
			}
			in.Pos = next
			r.line += int64(lines)
		case scanMore:
			if in.End-in.Pos > r.maxLine {
				r.badRecord(b, res)
				continue
			}
			if !in.Fill() && in.Err != nil {
				return nil, fmt.Errorf("%s: %w", r.name, in.Err)
			}
		case scanBadQuote:
			// Resynchronise at the end of the physical line the bad byte
			// is on.
			if j := bytes.IndexByte(in.Buf[next:in.End], '\n'); j >= 0 || in.AtEOF {
				b.Errors = append(b.Errors, rowio.RowError{Line: r.line, Msg: r.scanMessage(res)})
				if j >= 0 {
					in.Pos = next + j + 1
					r.line += int64(lines) + 1
				} else {
					in.Pos = in.End
				}
				continue
			}
			if in.End-in.Pos > r.maxLine {
				r.badRecord(b, res)
				continue
			}
			in.Fill()
		case scanUnterminated:
			r.badRecord(b, res)
		}
	}
	if in.Err != nil {
		// The tail may be a truncated record: report the failure instead.
		return nil, fmt.Errorf("%s: %w", r.name, in.Err)
	}
	if b.Rows == 0 && len(b.Errors) == 0 {
		return nil, io.EOF
	}
	return b, nil
}

// badRecord reports the record at in.pos as broken and resumes at the line
// after the one it starts on, so one stray quote costs one line, not the
// rest of the file.
func (r *csvReader) badRecord(b *rowio.Batch, res scanResult) {
	in := r.in
	b.Errors = append(b.Errors, rowio.RowError{Line: r.line, Msg: r.scanMessage(res)})
	if j := bytes.IndexByte(in.Buf[in.Pos:in.End], '\n'); j >= 0 {
		in.Pos += j + 1
		r.line++
		return
	}
	in.Pos = in.End
	r.skipping = !in.AtEOF
}

// addRow appends the scanned record to the batch. Fields stay in the input
// chunk; escaped ones are unescaped in place, which only shrinks them.
func (r *csvReader) addRow(b *rowio.Batch) {
	buf := r.in.Buf
	hasNull := r.opts.HasNullValue
	for c, sp := range r.spans {
		var v []byte
		if sp.flags&spanEscaped != 0 {
			v = r.unescapeInPlace(buf, sp)
		} else {
			v = buf[sp.s:sp.e:sp.e]
		}
		null := hasNull && sp.flags&spanQuoted == 0 && string(v) == r.opts.NullValue
		if null {
			v = nil
		}
		col := &b.Cols[c]
		col.Text = append(col.Text, v)
		col.Null = append(col.Null, null)
	}
	b.Line = append(b.Line, r.line)
	b.Rows++
	r.in.Owned = true
}

func (r *csvReader) unescapeInPlace(buf []byte, sp span) []byte {
	w := sp.s
	for i := sp.s; i < sp.e; i++ {
		c := buf[i]
		if (c == r.quote || c == r.escape && r.escape != 0) && i+1 < sp.e {
			i++
			c = buf[i]
		}
		buf[w] = c
		w++
	}
	return buf[sp.s:w:w]
}

// unescaped returns a field's value without touching the buffer.
func (r *csvReader) unescaped(sp span) []byte {
	v := r.in.Buf[sp.s:sp.e]
	if sp.flags&spanEscaped == 0 {
		return v
	}
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if (c == r.quote || c == r.escape && r.escape != 0) && i+1 < len(v) {
			i++
			c = v[i]
		}
		out = append(out, c)
	}
	return out
}

// scan parses the record starting at buf[i] into r.spans without
// modifying buf. It returns the offset after the record's line break and
// the number of line breaks it consumed (quoted ones included). With
// scanBadQuote, next is the offset of the offending byte.
func (r *csvReader) scan(buf []byte, i int, atEOF bool) (next, lines int, res scanResult) {
	r.spans = r.spans[:0]
	r.extra = 0
	n := len(buf)
	q, esc, delim := r.quote, r.escape, r.delim
	special := &r.special
	for {
		if i >= n {
			if !atEOF {
				return 0, 0, scanMore
			}
			// The input ends right after a separator: one last, empty field.
			r.addSpan(span{s: i, e: i})
			return i, lines, scanOK
		}
		if buf[i] == q && r.quoting {
			i++
			s := i
			flags := spanQuoted
			for {
				var j int
				if esc == 0 {
					j = bytes.IndexByte(buf[i:], q)
				} else {
					j = indexEither(buf[i:], q, esc)
				}
				if j < 0 {
					if !atEOF {
						return 0, 0, scanMore
					}
					return 0, 0, scanUnterminated
				}
				j += i
				if j+1 >= n && !atEOF {
					return 0, 0, scanMore // is the quote doubled? / what does the escape escape?
				}
				if buf[j] != q {
					if j+1 >= n {
						return 0, 0, scanUnterminated
					}
					flags |= spanEscaped
					i = j + 2
					continue
				}
				if j+1 < n && buf[j+1] == q {
					flags |= spanEscaped
					i = j + 2
					continue
				}
				lines += bytes.Count(buf[s:j], []byte{'\n'})
				r.addSpan(span{s: s, e: j, flags: flags})
				i = j + 1
				break
			}
			if i >= n {
				return i, lines, scanOK // atEOF: checked above
			}
			switch buf[i] {
			case delim:
				i++
				continue
			case '\n':
				return i + 1, lines + 1, scanOK
			case '\r':
				if i+1 >= n {
					if !atEOF {
						return 0, 0, scanMore
					}
					return i + 1, lines, scanOK
				}
				if buf[i+1] == '\n' {
					return i + 2, lines + 1, scanOK
				}
			}
			return i, lines, scanBadQuote
		}

		s := i
		for {
			for i < n && !special[buf[i]] {
				i++
			}
			// A CR not followed by LF is data.
			if i+1 < n && buf[i] == '\r' && buf[i+1] != '\n' {
				i++
				continue
			}
			break
		}
		r.addSpan(span{s: s, e: i})
		if i >= n {
			if !atEOF {
				return 0, 0, scanMore
			}
			return i, lines, scanOK
		}
		switch buf[i] {
		case delim:
			i++
		case '\n':
			return i + 1, lines + 1, scanOK
		default: // '\r'
			if i+1 < n {
				return i + 2, lines + 1, scanOK // followed by '\n', see above
			}
			if !atEOF {
				return 0, 0, scanMore
			}
			return i + 1, lines, scanOK
		}
	}
}

func (r *csvReader) addSpan(sp span) {
	if len(r.spans) < r.maxCols {
		r.spans = append(r.spans, sp)
	} else {
		r.extra++
	}
}

// indexEither returns the index of the first a or b in s, or -1.
func indexEither(s []byte, a, b byte) int {
	for i, c := range s {
		if c == a || c == b {
			return i
		}
	}
	return -1
}
