package tunnelserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/lakepipe/lakepipe/internal/codec"
	"github.com/lakepipe/lakepipe/internal/formats"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// Defaults of Config.
const (
	DefaultMaxFlushBytes = 256 << 20
	// DefaultMaxFlushRecords is far above what a client pack holds (the
	// client flushes at 64 MiB of rows, at most 1 GiB; at a byte a row,
	// the narrowest, that is 64 million): it stops packs of empty records
	// ("{}" lines), whose rows cost far more than their bytes.
	DefaultMaxFlushRecords = 100_000_000
	DefaultReadTimeout     = 10 * time.Minute
	DefaultStallTimeout    = 30 * time.Second
	DefaultIdleTimeout     = 2 * time.Minute
	// writeMargin is how much longer than ReadTimeout the default
	// WriteTimeout is: room for the write of a body read at the last moment.
	writeMargin = 5 * time.Minute
	// readHeaderTimeout bounds a request's headers, maxHeaderBytes their size.
	readHeaderTimeout = 10 * time.Second
	maxHeaderBytes    = 64 << 10
	// maxFlushIDBytes bounds a flush's id (the Go client's are ~40 bytes).
	maxFlushIDBytes = 256
)

// limitError is a flush over one of the service's limits (413 TooLarge).
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// timeoutError is a request body that did not arrive in time (408).
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }

// deadlineBody is a request body read under two deadlines: the whole
// body within ReadTimeout of the request's start, and no read waiting
// more than StallTimeout for its next bytes. The deadlines are set on the
// connection (http.ResponseController) as reads start, and lifted when
// the body ends or is closed, so that they never outlive it. The time the
// handler spends between reads (writing to ClickHouse) counts towards
// ReadTimeout but not towards StallTimeout. The first timeout is kept in
// err; reads after it fail with it.
type deadlineBody struct {
	body    io.ReadCloser
	rc      *http.ResponseController
	total   time.Duration
	end     time.Time // of the whole body
	stall   time.Duration
	renewed time.Time // when the deadline was last set
	off     bool      // deadlines unsupported, or lifted
	err     *timeoutError
}

func newDeadlineBody(w http.ResponseWriter, body io.ReadCloser, total, stall time.Duration) *deadlineBody {
	return &deadlineBody{body: body, rc: http.NewResponseController(w), total: total, end: time.Now().Add(total), stall: stall}
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if !d.off {
		// Renewing on every read would update a timer per read; an eighth
		// of the stall timeout later is soon enough.
		if now := time.Now(); now.Sub(d.renewed) >= d.stall/8 {
			dl := now.Add(d.stall)
			if d.end.Before(dl) {
				dl = d.end
			}
			if d.rc.SetReadDeadline(dl) != nil {
				d.off = true
			}
			d.renewed = now
		}
	}
	n, err := d.body.Read(p)
	var ne net.Error
	switch {
	case err == nil:
	case errors.As(err, &ne) && ne.Timeout():
		if time.Now().Before(d.end) {
			d.err = &timeoutError{fmt.Sprintf("the request body stalled: no bytes came for %s, the service's limit (lakepipe serve --stall-timeout)", d.stall)}
		} else {
			d.err = &timeoutError{fmt.Sprintf("the request body did not arrive within %s, the service's limit (lakepipe serve --read-timeout): flush smaller record packs, or raise the limit", d.total)}
		}
		return n, d.err
	default: // the end of the body, or the connection's
		d.lift()
	}
	return n, err
}

func (d *deadlineBody) lift() {
	if !d.off {
		_ = d.rc.SetReadDeadline(time.Time{})
		d.off = true
	}
}

// Close lifts the deadlines and closes the body.
func (d *deadlineBody) Close() error {
	d.lift()
	return d.body.Close()
}

// stickyReader counts what it reads and keeps the first error other than
// io.EOF, so that a limit hit under a format reader is recognised even if
// that reader's error does not wrap it.
type stickyReader struct {
	r   io.Reader
	n   int64
	err error
}

func (s *stickyReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n += int64(n)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// capReader fails with a *limitError once more than max bytes come
// through it: the decompressed bytes of a flush.
type capReader struct {
	r   io.Reader
	n   int64
	max int64
	err *limitError
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if room := c.max - c.n; int64(len(p)) > room {
		p = p[:room+1] // one byte past the limit tells it was passed
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.err = &limitError{fmt.Sprintf("the flush decompresses to more than %d bytes, the service's limit (lakepipe serve --max-flush-decompressed-bytes): flush smaller record packs", c.max)}
		return n - int(c.n-c.max), c.err
	}
	return n, err
}

// recordCap is a formats.Reader that fails with a *limitError once its
// batches hold more than max rows.
type recordCap struct {
	rowio.Reader
	rows, max int64
	err       *limitError
}

func (c *recordCap) Next() (*rowio.Batch, error) {
	if c.err != nil {
		return nil, c.err
	}
	b, err := c.Reader.Next()
	if err != nil {
		return b, err
	}
	if c.rows += int64(b.Rows); c.rows > c.max {
		c.err = tooManyRecords(c.max)
		return nil, c.err
	}
	return b, nil
}

func tooManyRecords(max int64) *limitError {
	return &limitError{fmt.Sprintf("the flush holds more than %d records, the service's limit (lakepipe serve --max-flush-records): flush smaller record packs", max)}
}

// packLimits are the bounds a flush body is decoded under.
type packLimits struct {
	MaxBytes             int64 // as sent (compressed)
	MaxDecompressedBytes int64
	MaxRecords           int64
}

// pack is a flush body being decoded: body (as sent, counted), the
// decompressor, the decompressed bytes (capped), and the format reader
// (its rows capped).
type pack struct {
	body  *stickyReader
	dec   io.ReadCloser
	plain *capReader
	rd    *recordCap
}

// openPack opens a flush body of the given Content-Encoding and format
// ("ARROW" or "JSON") under lim. A nil pack comes with an error that the
// encoding is unknown; a pack with an error is one the readers could not
// open (see pack.limitErr first). Close releases what it holds.
func openPack(body io.Reader, encoding, format string, opts rowio.Options, lim packLimits) (*pack, error) {
	p := &pack{body: &stickyReader{r: body}}
	dec, err := codec.NewReader(encoding, p.body)
	if err != nil {
		if _, cerr := codec.Canonical(encoding); cerr != nil {
			return nil, err
		}
		return p, err // a deflate header that is not one
	}
	p.dec = dec
	p.plain = &capReader{r: dec, max: lim.MaxDecompressedBytes}
	opts.Compression = rowio.CompressionNone
	rd, err := formats.Open(rowio.Source{R: p.plain, Name: "record pack"}, format, opts)
	if err != nil {
		return p, err
	}
	p.rd = &recordCap{Reader: rd, max: lim.MaxRecords}
	return p, nil
}

// limitErr returns the limit or timeout a failed read of the pack ran
// into, or nil: *limitError (413), *timeoutError (408), or
// *http.MaxBytesError (413) for a body over MaxFlushBytes.
func (p *pack) limitErr() error {
	if p == nil {
		return nil
	}
	var mb *http.MaxBytesError
	var te *timeoutError
	switch {
	case errors.As(p.body.err, &te):
		return te
	case errors.As(p.body.err, &mb):
		return mb
	case p.plain != nil && p.plain.err != nil:
		return p.plain.err
	case p.rd != nil && p.rd.err != nil:
		return p.rd.err
	}
	return nil
}

// Close closes the format reader and the decompressor.
func (p *pack) Close() {
	if p.rd != nil {
		p.rd.Close()
	}
	if p.dec != nil {
		p.dec.Close()
	}
}
