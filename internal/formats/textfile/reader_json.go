package textfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/lakepipe/lakepipe/internal/rowio"
)

type jsonReader struct {
	name string
	cnt  *rowio.CountingReader
	dec  *rowio.Decompressor
	in   *rowio.ChunkBuf
	opts rowio.Options

	cols   []rowio.Column
	exact  map[string]int
	folded map[string]int // lower-cased Schema names; nil without Schema

	array     bool // the file is one top-level array of objects
	arrayDone bool // its closing bracket was seen

	line     int64 // line number of in.buf[in.pos]
	skipping bool  // discarding the rest of an overlong line
	// maxLine, maxDepth and maxCols are from Options.Limits.
	maxLine, maxDepth, maxCols int

	// The row being parsed; it joins the batch only if the whole object
	// parses.
	rowVal [][]byte
	rowSet []bool
	keyBuf []byte
	lowBuf []byte

	// Key discovery (no Schema).
	discovering bool
	found       []string
	foundSet    map[string]bool

	batch rowio.Batch
}

var errNoObject = errors.New("expected a JSON object")

func NewJSONReader(name string, cnt *rowio.CountingReader, dec *rowio.Decompressor, opts rowio.Options) (*jsonReader, error) {
	r := &jsonReader{name: name, cnt: cnt, dec: dec, in: rowio.NewChunkBufFor(dec, dec.Size), opts: opts, line: 1,
		maxLine: int(min(opts.Limits.MaxLineBytes, math.MaxInt32)), maxDepth: opts.Limits.MaxJSONDepth, maxCols: opts.Limits.MaxColumns}
	if err := r.start(); err != nil {
		return nil, err
	}
	r.exact = make(map[string]int, len(r.cols))
	for i := len(r.cols) - 1; i >= 0; i-- { // the first of duplicate names wins
		r.exact[r.cols[i].Name] = i
	}
	if len(opts.Schema) > 0 {
		r.folded = make(map[string]int, len(r.cols))
		for i := len(r.cols) - 1; i >= 0; i-- {
			r.folded[strings.ToLower(r.cols[i].Name)] = i
		}
	}
	n := len(r.cols)
	r.rowVal = make([][]byte, n)
	r.rowSet = make([]bool, n)
	r.batch.Cols = make([]rowio.Vector, n)
	return r, nil
}

func (r *jsonReader) Columns() []rowio.Column { return r.cols }

func (r *jsonReader) BytesRead() int64 { return r.cnt.Count() }

func (r *jsonReader) Close() error { return r.dec.Close() }

// start skips the BOM and SkipRows lines, detects a top-level array and,
// without Schema, finds the columns: the keys of the first well-formed
// object, found by looking ahead without consuming anything.
func (r *jsonReader) start() error {
	in := r.in
	for in.End-in.Pos < 3 && in.Fill() {
	}
	if bytes.HasPrefix(in.Buf[in.Pos:in.End], []byte("\xef\xbb\xbf")) {
		in.Pos += 3
	}
	for range r.opts.SkipRows {
		if !r.skipLine() {
			break
		}
	}
	// Leading white space decides nothing; consume it.
	for {
		for in.Pos < in.End && isSpace(in.Buf[in.Pos]) {
			if in.Buf[in.Pos] == '\n' {
				r.line++
			}
			in.Pos++
		}
		if in.Pos < in.End || !in.Fill() {
			break
		}
	}
	if in.Err != nil {
		return fmt.Errorf("%s: %w", r.name, in.Err)
	}
	if in.Pos < in.End && in.Buf[in.Pos] == '[' {
		r.array = true
		in.Pos++
	}
	if len(r.opts.Schema) > r.maxCols {
		return fmt.Errorf("%s: %w", r.name, &rowio.LimitError{Limit: "MaxColumns", Value: int64(r.maxCols), What: fmt.Sprintf("a schema of %d columns", len(r.opts.Schema))})
	}
	if len(r.opts.Schema) > 0 {
		r.cols = append([]rowio.Column(nil), r.opts.Schema...)
		return nil
	}

	r.discovering = true
	defer func() { r.discovering = false }()
	off := 0 // look-ahead offset from in.pos
	for {
		var rec []byte
		var next int
		if r.array {
			s, e, st := r.element(off)
			if st == elemMore {
				if in.End-in.Pos > r.maxLine {
					return fmt.Errorf("%s: no well-formed JSON object in the first %s (LAKEPIPE_MAX_LINE_BYTES)", r.name, rowio.ByteSize(int64(r.maxLine)))
				}
				if !in.Fill() && in.Err != nil {
					return fmt.Errorf("%s: %w", r.name, in.Err)
				}
				continue
			}
			if st != elemOK {
				break // end of array or of input
			}
			rec, next = in.Buf[in.Pos+s:in.Pos+e], e
		} else {
			data := in.Buf[in.Pos+off : in.End]
			j := bytes.IndexByte(data, '\n')
			if j < 0 && !in.AtEOF {
				if in.End-in.Pos > r.maxLine {
					return fmt.Errorf("%s: no well-formed JSON object in the first %s (LAKEPIPE_MAX_LINE_BYTES)", r.name, rowio.ByteSize(int64(r.maxLine)))
				}
				if !in.Fill() && in.Err != nil {
					return fmt.Errorf("%s: %w", r.name, in.Err)
				}
				continue
			}
			if j < 0 {
				if len(data) == 0 {
					break
				}
				j = len(data)
				next = off + j
			} else {
				next = off + j + 1
			}
			rec = data[:j]
		}
		off = next
		if len(bytes.TrimSpace(rec)) == 0 {
			continue
		}
		r.found, r.foundSet = r.found[:0], map[string]bool{}
		p := jparser{b: rec, maxDepth: r.maxDepth}
		err := r.parseObject(&p)
		if len(r.found) > r.maxCols {
			return fmt.Errorf("%s: %w", r.name, &rowio.LimitError{Limit: "MaxColumns", Value: int64(r.maxCols), What: "the first JSON object has more keys"})
		}
		if err == nil {
			r.cols = make([]rowio.Column, len(r.found))
			for i, k := range r.found {
				r.cols[i] = rowio.Column{Name: k}
			}
			return nil
		}
	}
	r.cols = []rowio.Column{}
	return nil
}

func (r *jsonReader) skipLine() bool {
	if !r.in.SkipLine() {
		return false
	}
	r.line++
	return true
}

func (r *jsonReader) Next() (*rowio.Batch, error) {
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
	if r.array {
		r.nextArray(b)
	} else {
		r.nextLines(b)
	}
	if in.Err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, in.Err)
	}
	if b.Rows == 0 && len(b.Errors) == 0 {
		return nil, io.EOF
	}
	return b, nil
}

func (r *jsonReader) nextLines(b *rowio.Batch) {
	in := r.in
	for b.Rows+len(b.Errors) < r.opts.BatchRows {
		j := bytes.IndexByte(in.Buf[in.Pos:in.End], '\n')
		if r.skipping {
			if j >= 0 {
				in.Pos += j + 1
				r.line++
				r.skipping = false
				continue
			}
			in.Pos = in.End
			if in.Owned && b.Rows > 0 {
				return // see csvReader.Next
			}
			if !in.Fill() {
				return
			}
			continue
		}
		if j < 0 {
			if !in.AtEOF {
				if in.End-in.Pos > r.maxLine {
					b.Errors = append(b.Errors, rowio.RowError{Line: r.line, Msg: r.longLine()})
					in.Pos = in.End
					r.skipping = true
					continue
				}
				in.Fill()
				continue
			}
			if in.Pos >= in.End {
				return
			}
			j = in.End - in.Pos
		}
		rec := in.Buf[in.Pos : in.Pos+j]
		line := r.line
		in.Pos += j
		if in.Pos < in.End {
			in.Pos++ // the newline
			r.line++
		}
		if IsBlank(rec) {
			continue
		}
		if len(rec) > r.maxLine {
			// The buffer may hold more than maxLine when the line end is
			// found, so the limit is checked here too, to hold exactly.
			b.Errors = append(b.Errors, rowio.RowError{Line: line, Msg: r.longLine()})
			continue
		}
		r.addRecord(b, rec, line)
	}
}

func (r *jsonReader) longLine() string {
	return fmt.Sprintf("line longer than %s (LAKEPIPE_MAX_LINE_BYTES)", rowio.ByteSize(int64(r.maxLine)))
}

func (r *jsonReader) nextArray(b *rowio.Batch) {
	in := r.in
	for b.Rows+len(b.Errors) < r.opts.BatchRows && !r.arrayDone {
		s, e, st := r.element(0)
		if st == elemMore {
			if in.End-in.Pos > r.maxLine {
				b.Errors = append(b.Errors, rowio.RowError{Line: r.line, Msg: fmt.Sprintf("array element longer than %s (LAKEPIPE_MAX_LINE_BYTES)", rowio.ByteSize(int64(r.maxLine)))})
				r.arrayDone = true // there is no telling where the next one starts
				in.Pos = in.End
				return
			}
			in.Fill()
			continue
		}
		r.line += int64(bytes.Count(in.Buf[in.Pos:in.Pos+s], []byte{'\n'}))
		switch st {
		case elemClose:
			in.Pos += s + 1
			r.arrayDone = true
		case elemEOF:
			in.Pos = in.End
			r.arrayDone = true
		case elemTruncated:
			b.Errors = append(b.Errors, rowio.RowError{Line: r.line, Msg: "unterminated JSON array element"})
			in.Pos = in.End
			r.arrayDone = true
		case elemOK:
			rec := in.Buf[in.Pos+s : in.Pos+e]
			line := r.line
			r.line += int64(bytes.Count(rec, []byte{'\n'}))
			in.Pos += e
			r.addRecord(b, rec, line)
		}
	}
}

type elemStatus uint8

const (
	elemOK        elemStatus = iota
	elemMore                 // the buffer ends before the element does
	elemClose                // the closing bracket is at s
	elemEOF                  // the input ends (without a closing bracket)
	elemTruncated            // the input ends inside the element at s
)

// element finds the next array element at or after in.pos+off, skipping
// white space and commas; s and e are offsets from in.pos.
func (r *jsonReader) element(off int) (s, e int, st elemStatus) {
	in := r.in
	buf := in.Buf[in.Pos:in.End]
	i := off
	for i < len(buf) && (isSpace(buf[i]) || buf[i] == ',') {
		i++
	}
	if i >= len(buf) {
		if !in.AtEOF {
			return 0, 0, elemMore
		}
		return i, i, elemEOF
	}
	if buf[i] == ']' {
		return i, i, elemClose
	}
	end, complete := structuralEnd(buf, i)
	if !complete {
		if !in.AtEOF {
			return 0, 0, elemMore
		}
		return i, i, elemTruncated
	}
	return i, end, elemOK
}

// structuralEnd finds the end of the JSON value starting at b[i] by
// bracket counting (validation comes later); complete is false if b ends
// first.
func structuralEnd(b []byte, i int) (end int, complete bool) {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			j := i + 1
			for {
				k := bytes.IndexByte(b[j:], '"')
				if k < 0 {
					return 0, false
				}
				j += k
				// An odd run of backslashes escapes the quote.
				bs := 0
				for m := j - 1; m > i && b[m] == '\\'; m-- {
					bs++
				}
				if bs%2 == 0 {
					break
				}
				j++
			}
			i = j + 1
			if depth == 0 {
				return i, true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				return i + 1, true
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i, true
			}
		}
		i++
	}
	return 0, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func IsBlank(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

// addRecord parses one object into the batch, or records why it cannot.
func (r *jsonReader) addRecord(b *rowio.Batch, rec []byte, line int64) {
	clear(r.rowSet)
	p := jparser{b: rec, maxDepth: r.maxDepth}
	if err := r.parseObject(&p); err != nil {
		b.Errors = append(b.Errors, rowio.RowError{Line: line, Msg: err.Error()})
		return
	}
	for c := range b.Cols {
		v := &b.Cols[c]
		if r.rowSet[c] && r.rowVal[c] != nil {
			v.Text = append(v.Text, r.rowVal[c])
			v.Null = append(v.Null, false)
		} else {
			v.Text = append(v.Text, nil)
			v.Null = append(v.Null, true)
		}
	}
	b.Line = append(b.Line, line)
	b.Rows++
	r.in.Owned = true
}

// column maps an object key to a column index, or -1.
func (r *jsonReader) column(key []byte) int {
	if r.discovering {
		// One key past the limit is enough to refuse the object.
		if len(r.found) <= r.maxCols && !r.foundSet[string(key)] {
			k := string(key)
			r.foundSet[k] = true
			r.found = append(r.found, k)
		}
		return -1
	}
	if c, ok := r.exact[string(key)]; ok {
		return c
	}
	if r.folded != nil {
		r.lowBuf = appendLower(r.lowBuf[:0], key)
		if c, ok := r.folded[string(r.lowBuf)]; ok {
			return c
		}
	}
	return -1
}

func appendLower(dst, s []byte) []byte {
	for _, c := range s {
		if c >= 0x80 {
			return append(dst[:0], bytes.ToLower(s)...)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// jparser walks one JSON text. Values of wanted keys are decoded in place
// (decoding only ever shrinks them), so they need no copy.
type jparser struct {
	b        []byte
	i        int
	maxDepth int
}

func (p *jparser) ws() {
	for p.i < len(p.b) && isSpace(p.b[p.i]) {
		p.i++
	}
}

func (p *jparser) errorf(format string, args ...any) error {
	return fmt.Errorf("malformed JSON at byte %d: %s", p.i+1, fmt.Sprintf(format, args...))
}

func (p *jparser) eofOr(what string) error {
	if p.i >= len(p.b) {
		return p.errorf("unexpected end of line, expected %s", what)
	}
	return p.errorf("expected %s, found %q", what, p.b[p.i])
}

// parseObject parses the object that must make up all of p.b, filling
// r.rowVal/rowSet for wanted keys (null leaves rowVal nil).
func (r *jsonReader) parseObject(p *jparser) error {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		if p.i < len(p.b) {
			if _, err := p.skip(0); err == nil {
				p.ws()
				if p.i == len(p.b) {
					return errNoObject
				}
			}
			p.i = 0
			p.ws()
		}
		return p.eofOr("'{'")
	}
	p.i++
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
	} else {
		for {
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return p.eofOr("a string key")
			}
			raw, esc, err := p.rawString()
			if err != nil {
				return err
			}
			key := raw
			if esc {
				if r.keyBuf, err = unescapeAppend(r.keyBuf[:0], raw); err != nil {
					return p.errorf("%v", err)
				}
				key = r.keyBuf
			}
			c := r.column(key)
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return p.eofOr("':'")
			}
			p.i++
			p.ws()
			if c >= 0 {
				v, err := p.value()
				if err != nil {
					return err
				}
				r.rowVal[c], r.rowSet[c] = v, true
			} else if _, err := p.skip(1); err != nil {
				return err
			}
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				p.ws()
				continue
			}
			if p.i < len(p.b) && p.b[p.i] == '}' {
				p.i++
				break
			}
			return p.eofOr("',' or '}'")
		}
	}
	p.ws()
	if p.i != len(p.b) {
		return p.errorf("unexpected data after the object")
	}
	return nil
}

// rawString consumes a string at p.i and returns its undecoded content
// and whether it holds escapes.
func (p *jparser) rawString() (raw []byte, escaped bool, err error) {
	s := p.i + 1
	j := s
	for {
		k := bytes.IndexByte(p.b[j:], '"')
		if k < 0 {
			p.i = len(p.b)
			return nil, false, p.errorf("unterminated string")
		}
		k += j
		bs := bytes.IndexByte(p.b[j:k], '\\')
		if bs < 0 {
			p.i = k + 1
			return p.b[s:k], escaped, nil
		}
		escaped = true
		// Walk the escapes up to and past the quote that ends the string.
		m := j + bs
		for m < k {
			if p.b[m] == '\\' {
				m += 2
				continue
			}
			m++
		}
		if m == k {
			p.i = k + 1
			return p.b[s:k], true, nil
		}
		j = k + 1 // the quote at k was escaped
	}
}

// value decodes the value at p.i: string content, number text,
// true/false, compact JSON for objects and arrays, nil for null.
func (p *jparser) value() ([]byte, error) {
	if p.i >= len(p.b) {
		return nil, p.eofOr("a value")
	}
	start := p.i
	switch c := p.b[p.i]; {
	case c == '"':
		raw, esc, err := p.rawString()
		if err != nil {
			return nil, err
		}
		if !esc {
			return raw[:len(raw):len(raw)], nil
		}
		v, err := unescapeInPlace(raw)
		if err != nil {
			p.i = start
			return nil, p.errorf("%v", err)
		}
		return v, nil
	case c == '{' || c == '[':
		spaced, err := p.skip(1)
		if err != nil {
			return nil, err
		}
		v := p.b[start:p.i:p.i]
		if spaced {
			v = compactInPlace(v)
		}
		return v, nil
	case c == 'n':
		if err := p.literal("null"); err != nil {
			return nil, err
		}
		return nil, nil
	default:
		if _, err := p.skip(0); err != nil {
			return nil, err
		}
		return p.b[start:p.i:p.i], nil
	}
}

func (p *jparser) literal(word string) error {
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		return p.errorf("invalid literal, expected %s", word)
	}
	p.i += len(word)
	return nil
}

// skip validates and consumes the value at p.i, inside depth arrays and
// objects, without changing it; spaced reports white space inside it
// (outside strings).
func (p *jparser) skip(depth int) (spaced bool, err error) {
	if p.i >= len(p.b) {
		return false, p.eofOr("a value")
	}
	switch c := p.b[p.i]; c {
	case '"':
		raw, esc, err := p.rawString()
		if err != nil {
			return false, err
		}
		if esc {
			if err := checkEscapes(raw); err != nil {
				return false, p.errorf("%v", err)
			}
		}
		return false, nil
	case '{', '[':
		if depth >= p.maxDepth {
			return false, p.errorf("nested deeper than %d (LAKEPIPE_MAX_JSON_DEPTH)", p.maxDepth)
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		p.i++
		n := p.i
		p.ws()
		spaced = p.i > n
		if p.i < len(p.b) && p.b[p.i] == closer {
			p.i++
			return spaced, nil
		}
		for {
			if c == '{' {
				if p.i >= len(p.b) || p.b[p.i] != '"' {
					return false, p.eofOr("a string key")
				}
				if _, err := p.skip(depth + 1); err != nil {
					return false, err
				}
				n = p.i
				p.ws()
				if p.i >= len(p.b) || p.b[p.i] != ':' {
					return false, p.eofOr("':'")
				}
				p.i++
				p.ws()
				spaced = spaced || p.i > n+1
			}
			sp, err := p.skip(depth + 1)
			if err != nil {
				return false, err
			}
			n = p.i
			p.ws()
			spaced = spaced || sp || p.i > n
			if p.i >= len(p.b) {
				return false, p.eofOr(fmt.Sprintf("',' or %q", closer))
			}
			if p.b[p.i] == ',' {
				p.i++
				n = p.i
				p.ws()
				spaced = spaced || p.i > n
				continue
			}
			if p.b[p.i] == closer {
				p.i++
				return spaced, nil
			}
			return false, p.eofOr(fmt.Sprintf("',' or %q", closer))
		}
	case 't':
		return false, p.literal("true")
	case 'f':
		return false, p.literal("false")
	case 'n':
		return false, p.literal("null")
	}
	return false, p.number()
}

func (p *jparser) number() error {
	b, i := p.b, p.i
	digits := func() int {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - s
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return p.eofOr("a value")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			p.i = i
			return p.eofOr("a digit")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			p.i = i
			return p.eofOr("a digit")
		}
	}
	p.i = i
	return nil
}

// compactInPlace drops the white space outside strings from a valid JSON
// text.
func compactInPlace(b []byte) []byte {
	w := 0
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			if c == '\\' && i+1 < len(b) {
				b[w] = c
				w++
				i++
				c = b[i]
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case isSpace(c):
			continue
		}
		b[w] = c
		w++
	}
	return b[:w:w]
}

func checkEscapes(raw []byte) error {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if i >= len(raw) {
			return errors.New("bad escape")
		}
		switch raw[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if _, ok := hex4(raw[i+1:]); !ok {
				return errors.New(`bad \u escape`)
			}
			i += 4
		default:
			return fmt.Errorf("bad escape \\%c", raw[i])
		}
	}
	return nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unescapeInPlace decodes the escapes of a string's raw content in place:
// every escape is at least as long as what it stands for.
func unescapeInPlace(raw []byte) ([]byte, error) {
	w, err := unescapeTo(raw, raw)
	if err != nil {
		return nil, err
	}
	return raw[:w:w], nil
}

func unescapeAppend(dst, raw []byte) ([]byte, error) {
	if cap(dst) < len(raw) {
		dst = make([]byte, len(raw))
	}
	dst = dst[:len(raw)]
	w, err := unescapeTo(dst, raw)
	if err != nil {
		return nil, err
	}
	return dst[:w], nil
}

// unescapeTo decodes raw into dst, which may be raw itself, and returns
// the decoded length.
func unescapeTo(dst, raw []byte) (int, error) {
	w := 0
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			dst[w] = c
			w++
			i++
			continue
		}
		if i+1 >= len(raw) {
			return 0, errors.New("bad escape")
		}
		i += 2
		switch raw[i-1] {
		case '"', '\\', '/':
			dst[w] = raw[i-1]
		case 'b':
			dst[w] = '\b'
		case 'f':
			dst[w] = '\f'
		case 'n':
			dst[w] = '\n'
		case 'r':
			dst[w] = '\r'
		case 't':
			dst[w] = '\t'
		case 'u':
			r, ok := hex4(raw[i:])
			if !ok {
				return 0, errors.New(`bad \u escape`)
			}
			i += 4
			if utf16IsSurrogate(r) {
				r2, ok2 := rune(0), false
				if r < 0xdc00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2, ok2 = hex4(raw[i+2:])
				}
				if ok2 && r2 >= 0xdc00 && r2 < 0xe000 {
					r = (r-0xd800)<<10 | (r2 - 0xdc00) + 0x10000
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			w += utf8.EncodeRune(dst[w:], r)
			continue
		default:
			return 0, fmt.Errorf("bad escape \\%c", raw[i-1])
		}
		w++
	}
	return w, nil
}

func utf16IsSurrogate(r rune) bool { return 0xd800 <= r && r < 0xe000 }
