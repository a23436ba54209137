//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lakepipe/lakepipe/internal/sqlparse"
)

// oddKey is an object key, relative to a volume, that S3 allows but a
// file system path check would not: lakepipe uses the keys a listing shows
// exactly as listed (issue 17, point 4).
type oddKey struct{ what, rel string }

// oddKeys are the keys of the odd-keys tests. The long one reaches ~1,000
// bytes (S3 allows 1,024) in components of 200 bytes, as a POSIX-backed
// store such as versitygw allows 255 per component.
func oddKeys() []oddKey {
	long := strings.Repeat(strings.Repeat("d", 199)+"/", 4) + strings.Repeat("f", 186) + ".csv"
	return []oddKey{
		{"a backslash", `a\b.csv`},
		{"a '..' segment", "x/../y.csv"},
		{"an empty segment", "a//b.csv"},
		{"a '.' segment", "a/./b.csv"},
		{"a leading './'", "./lead.csv"},
		{"a space", "with space.csv"},
		{"unicode", "ünïcødé-数据.csv"},
		{"percent and plus", "100%+1 & more=.csv"},
		{"a 990-byte name", long},
		{"a plain name", "plain.csv"},
	}
}

// putOddKeys uploads every odd key under dir, each file two rows with ids
// of its own, and returns the keys the store then lists (relative to dir):
// what lakepipe must load, verbatim. Keys the store refuses to store, or
// stores under another name, are logged: that is the store's choice.
func (s *Stack) putOddKeys(dir string) []string {
	s.T.Helper()
	c := rawS3(s.T)
	for i, k := range oddKeys() {
		data := csvRows(100*(i+1), 2)
		key := s.key(dir + "/" + k.rel)
		_, err := c.PutObject(s.Ctx, s3Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
		if err != nil {
			s.T.Logf("the S3 server refuses to store a key with %s (%q): %v", k.what, k.rel, err)
		}
	}
	listed := s.files(dir)
	for _, k := range oddKeys() {
		if !slices.Contains(listed, k.rel) {
			s.T.Logf("the S3 server does not list a key with %s as uploaded (%q)", k.what, k.rel)
		}
	}
	s.T.Logf("the S3 server lists under %s/: %q", dir, listed)
	if len(listed) < 5 {
		s.T.Fatalf("the S3 server lists only %d of the %d odd keys: %q", len(listed), len(oddKeys()), listed)
	}
	return listed
}

// execWithin runs one statement with a deadline: the odd-keys tests must
// end, whatever the store answers.
func (s *Stack) execWithin(d time.Duration, sql string) (err error) {
	s.T.Helper()
	st, err := sqlparse.Parse(sql)
	if err != nil {
		s.T.Fatalf("%s: %v", sql, err)
	}
	ctx, cancel := context.WithTimeout(s.Ctx, d)
	defer cancel()
	_, err = s.Eng.Exec(ctx, st)
	if ctx.Err() != nil {
		s.T.Fatalf("%s did not end within %v (a file retried forever?): %v", sql, d, err)
	}
	return err
}

// checkOddLoads checks load_history against the listing: every listed key
// is there exactly as listed, LOADED with its 2 rows or FAILED with a
// reason, and nothing else is; the table holds the rows of the LOADED
// files. It returns the keys that failed.
func (s *Stack) checkOddLoads(tbl string, listed []string) (failed []string) {
	s.T.Helper()
	h := s.pipeHistory(tbl)
	loaded := 0
	for _, k := range listed {
		r, ok := h[k]
		switch {
		case !ok:
			s.T.Errorf("%s: load_history has no record of %q (records: %q)", tbl, k, keysOf(h))
		case r["status"] == "LOADED":
			loaded++
			if r["rows_loaded"] != "2" {
				s.T.Errorf("%s: %q LOADED %s rows, want 2", tbl, k, r["rows_loaded"])
			}
		case r["status"] == "FAILED":
			failed = append(failed, k)
			if r["first_error_message"] == "" {
				s.T.Errorf("%s: %q FAILED without a reason", tbl, k)
			}
			s.T.Logf("%s: %q FAILED: %s", tbl, k, r["first_error_message"])
		default:
			s.T.Errorf("%s: %q is %s, want LOADED or FAILED", tbl, k, r["status"])
		}
	}
	for k := range h {
		if !slices.Contains(listed, k) {
			s.T.Errorf("%s: load_history records %q, which the store does not list (a key rewritten?)", tbl, k)
		}
	}
	if n := s.pipeCount(tbl); n != int64(2*loaded) {
		s.T.Errorf("%s holds %d rows, want %d (2 per LOADED file)", tbl, n, 2*loaded)
	}
	if u := s.pipeScalar("SELECT uniqExact(id) FROM " + tbl); u != fmt.Sprint(2*loaded) {
		s.T.Errorf("%s holds %s distinct ids, want %d: a file loaded twice?", tbl, u, 2*loaded)
	}
	return failed
}

func keysOf(m map[string]map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestOddKeysCopy loads a volume of odd keys with one COPY INTO: each
// listed key is loaded once, by its listed name, and load_history shows
// that name. A key the store lists but will not serve fails the COPY
// naming it (ON_ERROR = 'abort', the default, stops at the first failed
// file), recorded FAILED; it never retries forever.
func TestOddKeysCopy(t *testing.T) {
	s := newStack(t)
	vol := s.volume("odd_copy", "copy", false)
	listed := s.putOddKeys("copy")
	s.pipeTable("t")
	err := s.execWithin(3*time.Minute, "COPY INTO t FROM VOLUME "+vol+" USING CSV")
	if err != nil {
		t.Logf("COPY INTO over the odd keys failed: %v", err)
		h := s.pipeHistory("t")
		var failed []string
		for k, r := range h {
			if r["status"] == "FAILED" {
				failed = append(failed, k)
			}
		}
		if len(failed) != 1 || !strings.Contains(err.Error(), failed[0]) {
			t.Fatalf("COPY failed (%v) with FAILED records %q: want one, named by the error", err, failed)
		}
		t.Fatalf("the store refused to serve listed key %q: lakepipe failed it as one file (correct), but every listed key of this store should load", failed[0])
	}
	if failed := s.checkOddLoads("t", listed); len(failed) > 0 {
		t.Errorf("COPY INTO succeeded but recorded FAILED files %q", failed)
	}

	// Each key also loads on its own, named as listed in FILES(…): a typed
	// path is cleaned, but falls back to the name as typed.
	s.run("CREATE TABLE one (id BIGINT, name STRING)")
	for _, k := range listed {
		if strings.Contains(k, `\`) || slices.Contains(strings.Split(k, "/"), "..") {
			continue // typed paths may not hold these: TestOddKeysTypedPaths
		}
		if err := s.execWithin(time.Minute, "COPY INTO one FROM VOLUME "+vol+" USING CSV FILES("+quoteSQL(k)+")"); err != nil {
			t.Errorf("COPY … FILES(%q): %v", k, err)
		}
	}
}

// TestOddKeysPipe runs a LIST pipe over a volume of odd keys: within a
// bounded time every listed key is LOADED exactly once or FAILED with a
// reason, under its listed name, and later turns load nothing again.
func TestOddKeysPipe(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	vol := s.volume("odd_pipe", "pipe", false)
	listed := s.putOddKeys("pipe")
	s.pipeTable("t")
	s.run(`CREATE PIPE odd_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO t FROM VOLUME ` + vol + ` USING CSV`)

	pipeWait(t, 2*time.Minute, "not every listed key is LOADED or FAILED", func() bool {
		h := s.pipeHistory("t")
		for _, k := range listed {
			if st := h[k]["status"]; st != "LOADED" && st != "FAILED" {
				return false
			}
		}
		return true
	})
	// Later turns list every key again: none is loaded (or failed) again.
	s.pipeWaitTurns("odd_pipe", 3, time.Minute)
	failed := s.checkOddLoads("t", listed)
	for _, k := range listed {
		if n := s.pipeRecords("t", k); n != 1 {
			t.Errorf("%q has %d load_history records, want 1 (loaded once, never retried)", k, n)
		}
	}
	d := s.pipeDesc("odd_pipe")
	if d["pipe_status"] != "RUNNING" || d["files_loaded"] != fmt.Sprint(len(listed)-len(failed)) || d["files_failed"] != fmt.Sprint(len(failed)) {
		t.Errorf("DESC PIPE EXTENDED: status %s files_loaded %s files_failed %s, want RUNNING %d %d (invalid_reason %q, last_error %q)",
			d["pipe_status"], d["files_loaded"], d["files_failed"], len(listed)-len(failed), len(failed), d["invalid_reason"], d["last_error"])
	}
	if len(failed) > 0 {
		t.Errorf("the store refused to serve listed keys %q: each failed as one file (correct), but every listed key of this store should load", failed)
	}
}

// TestOddKeysTypedPaths checks that paths a person types are still
// checked: '..' or a backslash in FILES(…) or SUBDIRECTORY is refused at
// once with an error that names the path and says why, and is not retried.
func TestOddKeysTypedPaths(t *testing.T) {
	s := newStack(t)
	vol := s.volume("typed_vol", "typed", false)
	s.put("typed/in/a.csv", csvRows(1, 1))
	s.put("outside.csv", csvRows(2, 1))
	s.pipeTable("t")
	for _, tt := range []struct{ sql, path string }{
		{"COPY INTO t FROM VOLUME " + vol + " USING CSV FILES('in/../../outside.csv')", "in/../../outside.csv"},
		{"COPY INTO t FROM VOLUME " + vol + " USING CSV FILES('x/../in/a.csv')", "x/../in/a.csv"},
		// SQL strings decode backslash escapes: '\\' is one backslash,
		// which errors show escaped again.
		{"COPY INTO t FROM VOLUME " + vol + ` USING CSV FILES('in\\a.csv')`, `in\\a.csv`},
		{"COPY INTO t FROM VOLUME " + vol + " USING CSV SUBDIRECTORY '../'", "../"},
		{"SELECT * FROM VOLUME " + vol + " USING CSV SUBDIRECTORY 'in/../..'", "in/../.."},
		{"SELECT * FROM VOLUME " + vol + " USING CSV FILES('in/a.csv', '../outside.csv')", "../outside.csv"},
	} {
		start := time.Now()
		err := s.mustFail(tt.sql, tt.path, "leaves the volume")
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %v to fail (retried?): %v", tt.sql, d, err)
		}
	}
	if n := s.pipeCount("t"); n != 0 {
		t.Errorf("t has %d rows after refused COPYs", n)
	}
	// The same path without the climb loads.
	s.run("COPY INTO t FROM VOLUME " + vol + " USING CSV FILES('in/./a.csv')")
	if n := s.pipeCount("t"); n != 1 {
		t.Errorf("t has %d rows, want 1", n)
	}
}

// TestOddKeysTypedPathsPipe checks a pipe whose SUBDIRECTORY climbs out of
// its volume: CREATE PIPE refuses it, or the pipe stops with the reason as
// its invalid_reason; it does not retry the listing forever.
func TestOddKeysTypedPathsPipe(t *testing.T) {
	s := newStack(t)
	s.withWorker()
	vol := s.volume("typed_pipe_vol", "typedpipe", false)
	s.pipeTable("t")
	err := s.runErr(`CREATE PIPE typed_pipe INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO t FROM VOLUME ` + vol + ` USING CSV SUBDIRECTORY '../'`)
	if err != nil {
		checkMessage(t, err.Error(), "../", "leaves the volume")
		return
	}
	t.Log("CREATE PIPE accepted SUBDIRECTORY '../'; the pipe must stop with the reason")
	pipeWait(t, time.Minute, "the pipe does not show why it cannot list", func() bool {
		d := s.pipeDesc("typed_pipe")
		return strings.Contains(d["invalid_reason"], "leaves the volume") || strings.Contains(d["last_error"], "leaves the volume")
	})
	d := s.pipeDesc("typed_pipe")
	t.Logf("pipe_status %q invalid_reason %q last_error %q", d["pipe_status"], d["invalid_reason"], d["last_error"])
	if !strings.Contains(d["invalid_reason"], "leaves the volume") {
		t.Errorf("invalid_reason = %q: a SUBDIRECTORY that leaves the volume is not fixed by retrying; the pipe should stop with it", d["invalid_reason"])
	}
}

// quoteSQL quotes a string literal for lakepipe SQL, whose strings decode
// backslash escapes.
func quoteSQL(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", "''").Replace(s) + "'"
}
