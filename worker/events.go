package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lakepipe/lakepipe/internal/httpauth"
	"github.com/lakepipe/lakepipe/internal/loading"
)

// Defaults of EventsConfig.
const (
	DefaultEventsMaxBytes    = 1 << 20
	DefaultEventsMaxRecords  = 1000
	DefaultEventsMaxPaths    = 1000
	DefaultEventsBodyTimeout = 10 * time.Second
	// maxKeyBytes is S3's limit on an object key; a longer one names no
	// object and is ignored.
	maxKeyBytes = 1024
	// signalTimeout bounds the signals of one request. They are sent on a
	// context of their own, so that a sender that stops waiting (versitygw
	// waits 3 s) does not cut the batch it already delivered.
	signalTimeout = 30 * time.Second
)

// EventsConfig bounds POST /events, the S3 event notification webhook.
// The zero value means every default.
type EventsConfig struct {
	// Token, when set, must come with every notification, in the
	// Authorization header as "Bearer <token>" (MinIO's auth_token), as the
	// bare token, or as the password of Basic authentication (put it in the
	// webhook URL: http://lakepipe:<token>@worker:9464/events, which is how
	// versitygw, which sets no headers, can send it). Other requests get
	// 401 before their body is read. Empty: anyone may post (the worker
	// warns at start). The worker reads it from LAKEPIPE_EVENTS_TOKEN.
	Token string
	// MaxBytes bounds a notification body (default 1 MiB); a larger one
	// gets 413 and nothing of it is applied.
	MaxBytes int64
	// MaxRecords bounds the records of one notification (default 1,000;
	// S3 sends one, MinIO one); more get 413 and nothing is applied.
	MaxRecords int
	// MaxPathsPerPipe bounds the new-file paths signalled to one pipe per
	// notification (default 1,000). Past it the pipe is only woken (a
	// refresh, no paths): its listing finds every new file anyway; the
	// paths only let it load those first.
	MaxPathsPerPipe int
	// BodyTimeout is how long the body may take to arrive once the headers
	// are read (default 10 s); a slower sender gets 408.
	BodyTimeout time.Duration
}

func (c EventsConfig) withDefaults() EventsConfig {
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultEventsMaxBytes
	}
	if c.MaxRecords <= 0 {
		c.MaxRecords = DefaultEventsMaxRecords
	}
	if c.MaxPathsPerPipe <= 0 {
		c.MaxPathsPerPipe = DefaultEventsMaxPaths
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultEventsBodyTimeout
	}
	return c
}

// eventRouter finds the pipes events concern: *engine.Engine, or a fake.
type eventRouter interface {
	// EventRoutes reads the catalog once for a whole notification.
	EventRoutes(ctx context.Context) (*loading.EventRoutes, error)
}

// signaler signals pipes: engine.Orchestrator, or a fake.
type signaler interface {
	Signal(ctx context.Context, id, signal string, arg any) error
}

// s3Record is one record of the standard S3 event notification body, as
// S3, MinIO, OSS and versitygw send it (only the fields lakepipe needs).
type s3Record struct {
	EventName string `json:"eventName"`
	S3        struct {
		Bucket struct {
			Name string `json:"name"`
		} `json:"bucket"`
		Object struct {
			Key string `json:"key"`
		} `json:"object"`
	} `json:"s3"`
}

// eventError is a refusal of a notification: its status and message.
type eventError struct {
	status int
	msg    string
}

func (e *eventError) Error() string { return e.msg }

// eventHandler accepts S3 event notifications and signals the pipes whose
// volumes they concern, so that a new file loads within about a second.
// Unauthenticated requests are refused before their body is read; a body
// is read within cfg's bounds, then the catalog once, then each concerned
// pipe gets one signal.
func eventHandler(router eventRouter, sig signaler, cfg EventsConfig, log *slog.Logger) http.Handler {
	cfg = cfg.withDefaults()
	if cfg.Token == "" {
		log.Warn("/events accepts S3 event notifications from anyone: set LAKEPIPE_EVENTS_TOKEN and give the object store the same token")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST S3 event notifications here", http.StatusMethodNotAllowed)
			return
		}
		if cfg.Token != "" && !httpauth.Authorized(r.Header.Get("Authorization"), cfg.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lakepipe events"`)
			refuseEvent(w, &eventError{http.StatusUnauthorized, "missing or wrong token: send Authorization: Bearer <the worker's LAKEPIPE_EVENTS_TOKEN>"})
			return
		}
		records, err := readEvents(w, r, cfg)
		if err != nil {
			var ee *eventError
			if !errors.As(err, &ee) {
				ee = &eventError{http.StatusBadRequest, err.Error()}
			}
			refuseEvent(w, ee)
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), signalTimeout)
		defer cancel()
		// Signals that fail are logged: the pipe's listing finds the files.
		if err := deliverEvents(ctx, router, sig, records, cfg.MaxPathsPerPipe, log); errors.Is(err, errCatalog) {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// refuseEvent answers a refusal and closes the connection, so that a
// sender of many bad requests pays a new connection for each.
func refuseEvent(w http.ResponseWriter, e *eventError) {
	w.Header().Set("Connection", "close")
	http.Error(w, e.msg, e.status)
}

// readEvents reads a notification body within cfg's bounds and returns
// its records. Errors are *eventError (413, 408) or plain (400).
func readEvents(w http.ResponseWriter, r *http.Request, cfg EventsConfig) ([]s3Record, error) {
	if r.ContentLength > cfg.MaxBytes {
		return nil, tooLargeBody(cfg)
	}
	// The body must arrive within BodyTimeout; the deadline is lifted once
	// it has (or has not), so that it does not outlive the body.
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(cfg.BodyTimeout)) == nil {
		defer rc.SetReadDeadline(time.Time{})
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, cfg.MaxBytes))
	if err != nil {
		var mb *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mb):
			return nil, tooLargeBody(cfg)
		case errors.As(err, &ne) && ne.Timeout():
			return nil, &eventError{http.StatusRequestTimeout, fmt.Sprintf("the notification body did not arrive within %s (the worker's events body timeout)", cfg.BodyTimeout)}
		}
		return nil, fmt.Errorf("read the notification: %w", err)
	}
	return parseEvents(body, cfg.MaxRecords)
}

func tooLargeBody(cfg EventsConfig) error {
	return &eventError{http.StatusRequestEntityTooLarge, fmt.Sprintf(
		"the notification body is larger than %d bytes, the worker's limit (lakepipe worker --events-max-bytes): send fewer records per notification", cfg.MaxBytes)}
}

// parseEvents decodes an S3 event notification: a JSON object whose
// "Records" array (matched case-insensitively, as encoding/json does)
// holds the records; other members are skipped, and a body without
// records (a test event) has none. It decodes the records one at a time
// and stops past maxRecords (413), so that a body of many tiny records
// costs no more memory than its size.
func parseEvents(body []byte, maxRecords int) ([]s3Record, error) {
	bad := func(err error) error { return fmt.Errorf("not an S3 event notification: %w", err) }
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, bad(err)
	}
	var out []s3Record
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, bad(err)
		}
		name, _ := t.(string)
		if !strings.EqualFold(name, "Records") {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, bad(err)
			}
			continue
		}
		t, err = dec.Token()
		if err != nil {
			return nil, bad(err)
		}
		if t == nil {
			continue // "Records": null
		}
		if d, ok := t.(json.Delim); !ok || d != '[' {
			return nil, bad(fmt.Errorf("Records is %v, not an array", t))
		}
		for dec.More() {
			if len(out) == maxRecords {
				return nil, &eventError{http.StatusRequestEntityTooLarge, fmt.Sprintf(
					"the notification has more than %d records, the worker's limit (lakepipe worker --events-max-records): send fewer records per notification", maxRecords)}
			}
			var rec s3Record
			if err := dec.Decode(&rec); err != nil {
				return nil, bad(err)
			}
			out = append(out, rec)
		}
		if err := expectDelim(dec, ']'); err != nil {
			return nil, bad(err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, bad(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad(errors.New("data after the notification object"))
	}
	return out, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %v", want, t)
	}
	return nil
}

// routeEvents groups the new objects of records by the pipe they concern,
// with one catalog read (none when no record is about a new object). It
// returns each pipe's paths, without repeats, and the pipes in the order
// of their first record.
func routeEvents(ctx context.Context, router eventRouter, records []s3Record) (map[string][]string, []string, error) {
	var routes *loading.EventRoutes
	batches := map[string][]string{}
	seen := map[loading.EventTarget]bool{}
	var order []string
	for _, rec := range records {
		if !strings.HasPrefix(rec.EventName, "s3:ObjectCreated:") && !strings.HasPrefix(rec.EventName, "ObjectCreated:") {
			continue // test events, deletions
		}
		key := eventKey(rec.S3.Object.Key)
		if key == "" || len(key) > maxKeyBytes {
			continue
		}
		if routes == nil {
			var err error
			if routes, err = router.EventRoutes(ctx); err != nil {
				return nil, nil, err
			}
		}
		for _, t := range routes.Route(rec.S3.Bucket.Name, key) {
			if seen[t] {
				continue
			}
			seen[t] = true
			if _, ok := batches[t.WorkflowID]; !ok {
				order = append(order, t.WorkflowID)
			}
			batches[t.WorkflowID] = append(batches[t.WorkflowID], t.Path)
		}
	}
	return batches, order, nil
}

// eventKey decodes an object key as S3 event notifications carry it:
// URL-encoded, with '+' for a space. A key that is not valid encoding is
// taken as it is.
func eventKey(raw string) string {
	if key, err := url.QueryUnescape(raw); err == nil {
		return key
	}
	return raw
}
