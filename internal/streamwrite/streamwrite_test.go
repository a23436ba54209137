package streamwrite

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/rowio"
	"github.com/lakepipe/lakepipe/tunnel"
)

// wantCode checks that err is a StreamError of code whose message holds
// every one of parts.
func wantCode(t *testing.T, err error, code tunnel.ErrorCode, parts ...string) {
	t.Helper()
	got, ok := IsStreamError(err)
	if !ok || got != code {
		t.Fatalf("err = %v (%T): want a StreamError %s", err, err, code)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%q does not say %q", err, p)
		}
	}
}

// The Writer in these tests has no catalog and no store: a test that
// reached either would panic on the nil pointer and fail.

func TestOpenStreamSessionRefusesBadRequests(t *testing.T) {
	cases := []struct {
		name string
		req  StreamSessionRequest
		want string
	}{
		{name: "no table", req: StreamSessionRequest{Schema: "public"}, want: "needs a table"},
		{name: "negative slot count", req: StreamSessionRequest{Table: "t", SlotNum: -1}, want: "slot_num -1: expected 0 (automatic) or more"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var e Writer
			e.Cfg.Schema = "public"
			_, err := e.OpenStreamSession(context.Background(), c.req)
			wantCode(t, err, tunnel.CodeBadRequest, c.want)
		})
	}
}

var partitioned = catalog.TableSpec{
	Columns: []catalog.ColumnSpec{
		{Name: "id", CHType: "Int64"},
		{Name: "dt", CHType: "Date"},
		{Name: "region", CHType: "LowCardinality(String)"},
		{Name: "hour", CHType: "Nullable(Int32)"},
	},
	PartitionBy: []string{"dt", "region", "hour"},
}

func TestParsePartitionSpec(t *testing.T) {
	cases := []struct {
		name    string
		text    string
		spec    catalog.TableSpec
		want    []string
		wantErr string
	}{
		{name: "in order", text: "dt=2023-10-01,region=hz,hour=7", spec: partitioned, want: []string{"2023-10-01", "hz", "7"}},
		{
			name: "any order, '/' between pairs, quotes, spaces, case: PARTITIONED BY order and the stored spelling",
			text: ` HOUR = '07' / Region="hz", dt=2023-10-01 00:00:00 `, spec: partitioned, want: []string{"2023-10-01", "hz", "7"},
		},
		{name: "a timestamp for a DATE keeps the day", text: "dt=2023-10-01T23:59:59Z,region=hz,hour=0", spec: partitioned, want: []string{"2023-10-01", "hz", "0"}},
		{name: "unpartitioned table", text: "dt=2023-10-01", spec: catalog.TableSpec{Columns: partitioned.Columns}, wantErr: "table public.t is not partitioned"},
		{name: "a partition column left out", text: "dt=2023-10-01,hour=1", spec: partitioned, wantErr: `does not give region (table public.t is partitioned by dt, region, hour)`},
		{name: "not a partition column", text: "dt=2023-10-01,region=hz,hour=1,id=3", spec: partitioned, wantErr: "id is not a partition column of public.t"},
		{name: "no '='", text: "dt,region=hz", spec: partitioned, wantErr: "expected col=value[,col=value]"},
		{name: "no column name", text: "=2023-10-01", spec: partitioned, wantErr: "expected col=value[,col=value]"},
		{name: "not a date", text: "dt=yesterday,region=hz,hour=1", spec: partitioned, wantErr: `dt: "yesterday" is not a DATE`},
		{name: "not an integer", text: "dt=2023-10-01,region=hz,hour=7am", spec: partitioned, wantErr: `hour: "7am" is not an integer`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parsePartitionSpec(c.text, c.spec, "public.t")
			if c.wantErr != "" {
				wantCode(t, err, tunnel.CodeBadRequest, c.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%q → %q, want %q", c.text, got, c.want)
			}
		})
	}
}

// Partition values from a spec, JSON text and Arrow arrays must compare
// equal to ClickHouse's toString of the stored value.
func TestNormalizePartValue(t *testing.T) {
	cases := []struct {
		chType, in, want string
		bad              bool
	}{
		{chType: "Date", in: "2023-10-01", want: "2023-10-01"},
		{chType: "Nullable(Date)", in: "2023/10/01", want: "2023-10-01"},
		{chType: "Date", in: "2023-10-01 12:00:00", want: "2023-10-01"},
		{chType: "DateTime", in: "2023-10-01T01:02:03Z", want: "2023-10-01 01:02:03"},
		{chType: "DateTime", in: "2023-10-01T03:02:03+02:00", want: "2023-10-01 01:02:03"},
		{chType: "DateTime", in: "2023-10-01", want: "2023-10-01 00:00:00"},
		{chType: "Int32", in: " 007 ", want: "7"},
		{chType: "Nullable(Int64)", in: "-12", want: "-12"},
		{chType: "UInt8", in: "+3", want: "3"},
		{chType: "String", in: " hz ", want: " hz "},
		{chType: "LowCardinality(Nullable(String))", in: "007", want: "007"},
		{chType: "Date", in: "2023-13-01", bad: true},
		{chType: "DateTime", in: "noon", bad: true},
		{chType: "Int16", in: "1.5", bad: true},
	}
	for _, c := range cases {
		t.Run(c.chType+" "+c.in, func(t *testing.T) {
			got, err := normalizePartValue(c.chType, c.in)
			if c.bad {
				if err == nil {
					t.Errorf("%q accepted as %q", c.in, got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("%q → %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
}

func TestSameBaseType(t *testing.T) {
	cases := []struct {
		payload, table string
		want           bool
	}{
		{payload: "Int64", table: "Int64", want: true},
		{payload: "Nullable(Int64)", table: "Int64", want: true},
		{payload: "Int64", table: "LowCardinality(Nullable(Int64))", want: true},
		{payload: "Int32", table: "Int64", want: false},
		{payload: "UInt64", table: "Int64", want: false},
		{payload: "Float64", table: "Float32", want: false},
		{payload: "String", table: "FixedString(8)", want: true},
		{payload: "String", table: "Int64", want: false},
		{payload: "Date", table: "Date32", want: true},
		{payload: "DateTime", table: "DateTime", want: true},
		{payload: "DateTime", table: "DateTime64(3)", want: true},
		{payload: "Decimal(10, 2)", table: "Decimal(10,2)", want: true},
		{payload: "Decimal(10, 2)", table: "Decimal(10, 3)", want: false},
		{payload: "Decimal(18, 4)", table: "Decimal64(4)", want: true},
		// Types Arrow export does not map are compared by name, spaces aside.
		{payload: "Map(String, Int64)", table: "Map(String,Int64)", want: true},
		{payload: "Array(Int64)", table: "Array(Int32)", want: false},
	}
	for _, c := range cases {
		t.Run(c.payload+" vs "+c.table, func(t *testing.T) {
			if got := sameBaseType(c.payload, c.table); got != c.want {
				t.Errorf("sameBaseType(%q, %q) = %v, want %v", c.payload, c.table, got, c.want)
			}
		})
	}
}

func TestPackMapping(t *testing.T) {
	spec := catalog.TableSpec{Columns: []catalog.ColumnSpec{
		{Name: "id", CHType: "Int64"},
		{Name: "name", CHType: "Nullable(String)"},
		{Name: "amount", CHType: "Decimal(10, 2)"},
	}}
	target := core.TableTarget("public", "t", spec, spec.Columns)
	col := func(name, typ string) rowio.Column { return rowio.Column{Name: name, Type: typ} }
	cases := []struct {
		name     string
		src      []rowio.Column
		typed    bool
		allow    bool
		want     []int
		wantCode tunnel.ErrorCode
		wantMsg  string
	}{
		{name: "all columns, reordered, any case", src: []rowio.Column{col("NAME", ""), col("Amount", ""), col("id", "")}, want: []int{2, 0, 1}},
		{name: "columns the pack lacks get -1", src: []rowio.Column{col("name", "")}, want: []int{-1, 0, -1}},
		{name: "typed, the table's types", src: []rowio.Column{col("id", "Int64"), col("amount", "Decimal(10, 2)"), col("name", "String")}, typed: true, want: []int{0, 2, 1}},
		{name: "untyped payloads are not compared", src: []rowio.Column{col("id", "String")}, want: []int{0, -1, -1}},
		{name: "a typed column of no type (Arrow null) fits any", src: []rowio.Column{col("id", "")}, typed: true, want: []int{0, -1, -1}},
		{name: "a session allowing mismatch takes another type", src: []rowio.Column{col("id", "Int32")}, typed: true, allow: true, want: []int{0, -1, -1}},
		{
			name: "a column the table lacks", src: []rowio.Column{col("id", ""), col("colour", "")},
			wantCode: tunnel.CodeBadPayload, wantMsg: "the record pack has a column colour that table public.t does not have (columns: id, name, amount)",
		},
		{
			name: "a column the table lacks, even allowing mismatch", src: []rowio.Column{col("colour", "String")}, typed: true, allow: true,
			wantCode: tunnel.CodeBadPayload, wantMsg: "column colour",
		},
		{
			name: "strict: another type", src: []rowio.Column{col("id", "Int64"), col("amount", "Float64")}, typed: true,
			wantCode: tunnel.CodeSchemaMismatch, wantMsg: "column amount of table public.t is Decimal(10, 2) but the record pack has Float64",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := StreamSession{Schema: "public", Table: "t", AllowMismatch: c.allow}
			got, err := packMapping(s, c.typed, c.src, target, spec)
			if c.wantCode != "" {
				wantCode(t, err, c.wantCode, c.wantMsg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("mapping %v, want %v", got, c.want)
			}
		})
	}
}

func TestCheckSessionSchema(t *testing.T) {
	id := catalog.ColumnSpec{Name: "id", Type: "BIGINT", CHType: "Int64"}
	name := catalog.ColumnSpec{Name: "name", Type: "STRING", CHType: "Nullable(String)"}
	nameInt := catalog.ColumnSpec{Name: "name", Type: "INT", CHType: "Nullable(Int32)"}
	extra := catalog.ColumnSpec{Name: "extra", Type: "STRING", CHType: "Nullable(String)"}
	session := StreamSession{Schema: "public", Table: "t", Version: 3, Columns: []catalog.ColumnSpec{id, name}}
	cases := []struct {
		name  string
		allow bool
		table catalog.TableSpec
		want  string // "" for no error, else part of the SchemaMismatch message
	}{
		{name: "same version", table: catalog.TableSpec{SchemaVersion: 3, Columns: []catalog.ColumnSpec{id, name}}},
		// The version is the contract: columns are not compared when it matches.
		{name: "same version, columns not compared", table: catalog.TableSpec{SchemaVersion: 3}},
		{name: "strict, a column added", table: catalog.TableSpec{SchemaVersion: 4, Columns: []catalog.ColumnSpec{id, name, extra}},
			want: "table public.t changed from schema version 3 to 4 since the session opened: open a new session"},
		{name: "allowing, a column added", allow: true, table: catalog.TableSpec{SchemaVersion: 4, Columns: []catalog.ColumnSpec{extra, name, id}}},
		{name: "allowing, a column's name in another case", allow: true, table: catalog.TableSpec{SchemaVersion: 4, Columns: []catalog.ColumnSpec{{Name: "ID", Type: "BIGINT", CHType: "Int64"}, name}}},
		{name: "allowing, a column's type changed", allow: true, table: catalog.TableSpec{SchemaVersion: 4, Columns: []catalog.ColumnSpec{id, nameInt}},
			want: "and column name is now INT (was STRING): open a new session"},
		{name: "allowing, a column dropped", allow: true, table: catalog.TableSpec{SchemaVersion: 5, Columns: []catalog.ColumnSpec{id}},
			want: "from schema version 3 to 5 since the session opened and column name was dropped"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := session
			s.AllowMismatch = c.allow
			err := checkSessionSchema(s, c.table)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, tunnel.CodeSchemaMismatch, c.want)
		})
	}
}

// A flush's commit id is what makes a retried flush find its rows: the
// same session, flush id and attempt always give the same one, anything
// else another; attempt 1 and an unnumbered attempt share the flush's.
func TestFlushCommit(t *testing.T) {
	a := flushCommit("s1", "f1", 1)
	if a != flushCommit("s1", "f1", 1) || a != flushCommit("s1", "f1", 0) {
		t.Error("the same flush gave two commit ids")
	}
	if a != core.FlushIDCommit("s1", "f1") {
		t.Error("flushCommit is not core.FlushIDCommit: flushes recorded by other code would not be found")
	}
	seen := map[uint64]string{a: "s1/f1"}
	for i, c := range priorCommits("s1", "f1", 4)[2:] {
		if c == a || c == flushCommit("s1", "f1", 1) {
			t.Errorf("attempt %d shares attempt 1's commit", i+2)
		}
		seen[c] = fmt.Sprintf("s1/f1#%d", i+2)
	}
	if len(seen) != 3 {
		t.Errorf("attempts 1-3 gave %d distinct commits, want 3", len(seen))
	}
	for _, p := range [][2]string{{"s1", "f2"}, {"s2", "f1"}, {"s", "1f1"}, {"s1f", "1"}, {"", "s1f1"}, {"f1", "s1"}} {
		c := flushCommit(p[0], p[1], 1)
		if prev, dup := seen[c]; dup {
			t.Errorf("%s/%s and %s share commit %d", p[0], p[1], prev, c)
		}
		seen[c] = p[0] + "/" + p[1]
	}
	if a == core.LegacyFlushCommit("s1", "f1") {
		t.Error("the commit id is the legacy one: FlushStream checks both, so they must differ")
	}
	// Without a flush id every flush is a load of its own.
	r1, r2 := flushCommit("s1", "", 1), flushCommit("s1", "", 1)
	if r1 == r2 || r1 == 0 || r2 == 0 {
		t.Errorf("flushes without an id: commits %d and %d, want distinct and non-zero", r1, r2)
	}
	for c := range seen {
		if c == 0 || c&1 == 0 {
			t.Errorf("commit %d: want odd (never the 0 of plain INSERTs)", c)
		}
	}
}

func TestStreamErrors(t *testing.T) {
	cause := errors.New("bad arrow message")
	cases := []struct {
		name     string
		err      error
		wantCode tunnel.ErrorCode
		isStream bool
		// Whether the write service answers 503 (retry the flush): only
		// for ErrStoreUnavailable, which must not look like the client's fault.
		unavailable bool
	}{
		{name: "streamErr", err: streamErr(tunnel.CodeNoSuchTable, "table %s does not exist", "public.t"), wantCode: tunnel.CodeNoSuchTable, isStream: true},
		{name: "wrapped", err: fmt.Errorf("flush: %w", streamErr(tunnel.CodeBadPayload, "x")), wantCode: tunnel.CodeBadPayload, isStream: true},
		{name: "with a cause", err: &StreamError{Code: tunnel.CodeBadPayload, Msg: "record pack: bad", Err: cause}, wantCode: tunnel.CodeBadPayload, isStream: true},
		{name: "a store error", err: errors.New("clickhouse: connection refused")},
		{
			// As FlushStream wraps a failed check of earlier attempts.
			name:        "store unavailable",
			err:         fmt.Errorf("flush %s into %s: %w: %w", "f1", "public.t", ErrStoreUnavailable, errors.New("connection refused")),
			unavailable: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, ok := IsStreamError(c.err)
			if ok != c.isStream || code != c.wantCode {
				t.Errorf("IsStreamError = %q, %v; want %q, %v", code, ok, c.wantCode, c.isStream)
			}
			if errors.Is(c.err, ErrStoreUnavailable) != c.unavailable {
				t.Errorf("errors.Is(ErrStoreUnavailable) = %v, want %v", !c.unavailable, c.unavailable)
			}
		})
	}
	se := streamErr(tunnel.CodeTooLarge, "pack of %d bytes", 10)
	if se.Error() != "pack of 10 bytes" {
		t.Errorf("message %q", se)
	}
	if err := (&StreamError{Code: tunnel.CodeBadPayload, Msg: "m", Err: cause}); !errors.Is(err, cause) {
		t.Error("a StreamError hides its cause")
	}
}

// Expiry counts from the last recorded use, or from the opening when the
// session was never touched.
func TestSessionUsedAt(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		lastUsed time.Time
		want     time.Time
	}{
		{name: "never touched", want: created},
		{name: "touched later", lastUsed: created.Add(48 * time.Hour), want: created.Add(48 * time.Hour)},
		{name: "a touch before the opening (clock skew) does not age it", lastUsed: created.Add(-time.Hour), want: created},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := StreamSession{CreatedAt: created, LastUsed: c.lastUsed}
			if got := s.usedAt(); !got.Equal(c.want) {
				t.Errorf("usedAt = %v, want %v", got, c.want)
			}
		})
	}
}

// A session used within the hour is not recorded again: no catalog write
// per flush. (The recording itself needs the catalog.)
func TestTouchStreamSessionIsThrottled(t *testing.T) {
	var e Writer // no catalog: a write would panic
	for _, s := range []StreamSession{
		{ID: "opened", CreatedAt: time.Now().UTC().Add(-sessionTouchEvery / 2)},
		{ID: "touched", CreatedAt: time.Now().UTC().Add(-30 * 24 * time.Hour), LastUsed: time.Now().UTC().Add(-time.Minute)},
	} {
		got, err := e.TouchStreamSession(context.Background(), s)
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Errorf("%s: %+v, %v; want it unchanged", s.ID, got, err)
		}
	}
}

func TestNewSessionID(t *testing.T) {
	a, b := newSessionID(), newSessionID()
	if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" || a == b {
		t.Errorf("session ids %q and %q: want 32 hex digits, distinct", a, b)
	}
}

func TestPartitionSources(t *testing.T) {
	target := core.TableTarget("public", "t", partitioned, partitioned.Columns)
	cases := []struct {
		name        string
		session     StreamSession
		spec        catalog.TableSpec
		mapping     []int // of the pack's 2 columns (id, dt) onto id, dt, region, hour
		wantPlan    *partitionPlan
		wantMapping []int
		wantCode    tunnel.ErrorCode
		wantErr     string
	}{
		{name: "unpartitioned", spec: catalog.TableSpec{Columns: partitioned.Columns}, mapping: []int{0, 1, -1, -1}, wantMapping: []int{0, 1, -1, -1}},
		{
			name:    "fixed partition: constant vectors after the pack's columns feed the partition columns",
			session: StreamSession{Partition: []string{"2023-10-01", "hz", "7"}}, spec: partitioned, mapping: []int{0, 1, -1, -1},
			wantPlan: &partitionPlan{cols: []int{1, 2, 3}, types: []string{"Date", "LowCardinality(String)", "Nullable(Int32)"},
				fixed: []string{"2023-10-01", "hz", "7"}, payload: []int{1, -1, -1}, extra: 2},
			wantMapping: []int{0, 2, 3, 4},
		},
		{
			name:     "dynamic partitions: the pack must carry every partition column",
			spec:     partitioned,
			mapping:  []int{0, 1, -1, -1},
			wantCode: tunnel.CodeBadPayload, wantErr: "the record pack has no partition column region",
		},
		{
			name:    "a partition column the table does not have",
			spec:    catalog.TableSpec{Columns: partitioned.Columns, PartitionBy: []string{"day"}},
			mapping: []int{0, 1, -1, -1},
			wantErr: "table public.t: partition column day is not a column",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.session
			s.Schema, s.Table = "public", "t"
			mapping := append([]int(nil), c.mapping...)
			plan, err := partitionSources(s, c.spec, target, mapping, 2)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if code, ok := IsStreamError(err); code != c.wantCode || (c.wantCode == "") == ok {
					t.Errorf("code %q (%v), want %q", code, ok, c.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plan, c.wantPlan) || !reflect.DeepEqual(mapping, c.wantMapping) {
				t.Errorf("plan %+v mapping %v\nwant %+v mapping %v", plan, mapping, c.wantPlan, c.wantMapping)
			}
		})
	}
}

func textVector(vals ...string) rowio.Vector {
	v := rowio.Vector{Text: make([][]byte, len(vals)), Null: make([]bool, len(vals))}
	for i, s := range vals {
		if s == "NULL" {
			v.Null[i] = true
			continue
		}
		v.Text[i] = []byte(s)
	}
	return v
}

func TestRoutePartitionsFixed(t *testing.T) {
	// Table (id, dt, region, hour); the pack carries id and dt; the session
	// writes dt=2023-10-01, region=hz, hour=7.
	s := StreamSession{ID: "fixed", Schema: "public", Table: "t", PartitionBy: partitioned.PartitionBy,
		Partition: []string{"2023-10-01", "hz", "7"}, PartitionSpec: "dt=2023-10-01,region=hz,hour=7"}
	target := core.TableTarget("public", "t", partitioned, partitioned.Columns)
	mapping := []int{0, 1, -1, -1}
	plan, err := partitionSources(s, partitioned, target, mapping, 2)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		dt      rowio.Vector
		wantErr string
	}{
		{name: "every row in the partition, spelled any way", dt: textVector("2023-10-01", "2023/10/01", "2023-10-01 08:00:00")},
		{name: "a row of another partition", dt: textVector("2023-10-01", "2023-10-02"), wantErr: "record pack for public.t, record 12: dt is 2023-10-02 but the session writes partition dt=2023-10-01,region=hz,hour=7"},
		{name: "a NULL partition value", dt: textVector("NULL"), wantErr: "record 11: partition column dt is NULL"},
		{name: "not a date", dt: textVector("soon"), wantErr: `record 11: partition column dt: "soon" is not a DATE`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := len(c.dt.Text)
			ids := make([]string, n)
			lines := make([]int64, n)
			for i := range ids {
				ids[i], lines[i] = fmt.Sprint(i), int64(11+i)
			}
			b := &rowio.Batch{Rows: n, Cols: []rowio.Vector{textVector(ids...), c.dt}, Line: lines}
			var e Writer // a fixed partition needs no store
			out, err := e.routePartitions(context.Background(), &s, plan, b, "public.t")
			if c.wantErr != "" {
				wantCode(t, err, tunnel.CodeBadPayload, c.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Cols) != 2 {
				t.Error("the caller's batch was changed")
			}
			if len(out.Cols) != 5 || out.Rows != n {
				t.Fatalf("routed batch has %d columns and %d rows, want 5 and %d", len(out.Cols), out.Rows, n)
			}
			for k, want := range s.Partition {
				for r := range n {
					if got := string(out.Cols[2+k].Text[r]); got != want {
						t.Errorf("constant column %d row %d = %q, want %q", k, r, got, want)
					}
				}
			}
		})
	}
}

func TestRoutePartitionsDynamic(t *testing.T) {
	spec := catalog.TableSpec{Columns: []catalog.ColumnSpec{{Name: "id", CHType: "Int64"}, {Name: "dt", CHType: "Date"}}, PartitionBy: []string{"dt"}}
	target := core.TableTarget("public", "t", spec, spec.Columns)
	batch := func() *rowio.Batch {
		return &rowio.Batch{Rows: 2, Cols: []rowio.Vector{textVector("1", "2"), textVector("2023-10-01", "2023/10/02")}}
	}
	t.Run("creating partitions asks nothing", func(t *testing.T) {
		s := StreamSession{ID: "dyn-create", Schema: "public", Table: "t", PartitionBy: spec.PartitionBy, CreatePartition: true}
		plan, err := partitionSources(s, spec, target, []int{0, 1}, 2)
		if err != nil {
			t.Fatal(err)
		}
		var e Writer // no store: asking would panic
		b := batch()
		out, err := e.routePartitions(context.Background(), &s, plan, b, "public.t")
		if err != nil || out != b {
			t.Errorf("%v: want the batch passed on as it is", err)
		}
	})
	t.Run("partitions known to exist are not asked about again", func(t *testing.T) {
		s := StreamSession{ID: "dyn-known", Schema: "public", Table: "t", PartitionBy: spec.PartitionBy}
		knownPartitions.add(s.ID, []string{"2023-10-01", "2023-10-02"})
		var e Writer // no store: asking would panic
		defer knownPartitions.Delete(s.ID)
		plan, err := partitionSources(s, spec, target, []int{0, 1}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.routePartitions(context.Background(), &s, plan, batch(), "public.t"); err != nil {
			t.Fatal(err)
		}
		missing, err := e.missingPartitions(context.Background(), &s, []string{"2023-10-02", "2023-10-01"})
		if err != nil || missing != nil {
			t.Errorf("missing %v, %v; want none", missing, err)
		}
	})
}

// The cache of known partitions is bounded: past its sessions it starts
// over, and a session past its partitions starts over on its own.
func TestPartitionCacheBounded(t *testing.T) {
	c := partitionCache{sessions: map[string]map[string]struct{}{}}
	for i := range maxCachedSessions + 10 {
		c.add(fmt.Sprint("s", i), []string{"p"})
	}
	if n := len(c.sessions); n > maxCachedSessions {
		t.Fatalf("%d sessions kept, want at most %d", n, maxCachedSessions)
	}
	if u := c.unknown(fmt.Sprint("s", maxCachedSessions+9), []string{"p", "q"}); len(u) != 1 || u[0] != "q" {
		t.Fatalf("unknown %v, want [q]: the last session's partition kept", u)
	}
	keys := make([]string, maxCachedPartitions)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	c.add("big", keys)
	c.add("big", []string{"one more"})
	if n := len(c.sessions["big"]); n != 1 {
		t.Fatalf("a session past %d partitions keeps %d, want 1 (started over)", maxCachedPartitions, n)
	}
	c.Delete("big")
	if _, ok := c.sessions["big"]; ok {
		t.Fatal("a closed session is kept")
	}
}

// Arrow payloads render partition values with ValueStr; nulls are NULL.
func TestCellText(t *testing.T) {
	bld := array.NewInt32Builder(memory.NewGoAllocator())
	defer bld.Release()
	bld.AppendValues([]int32{7, 0}, []bool{true, false})
	arr := bld.NewArray()
	defer arr.Release()
	cases := []struct {
		name string
		v    rowio.Vector
		row  int
		want string
		null bool
	}{
		{name: "arrow value", v: rowio.Vector{Arrow: arr}, row: 0, want: "7"},
		{name: "arrow null", v: rowio.Vector{Arrow: arr}, row: 1, null: true},
		{name: "text", v: textVector("a", "NULL"), row: 0, want: "a"},
		{name: "text null", v: textVector("a", "NULL"), row: 1, null: true},
		{name: "text without a null vector", v: rowio.Vector{Text: [][]byte{[]byte("b")}}, row: 0, want: "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, null := cellText(&c.v, c.row)
			if got != c.want || null != c.null {
				t.Errorf("cellText = %q, %v; want %q, %v", got, null, c.want, c.null)
			}
		})
	}
}

func TestPartitionNameAndLines(t *testing.T) {
	if got := partitionName([]string{"dt", "region"}, "2023-10-01\x00hz"); got != "dt=2023-10-01,region=hz" {
		t.Errorf("partitionName = %q", got)
	}
	b := &rowio.Batch{Rows: 3, Line: []int64{5, 9}}
	if lineOf(b, 1) != 9 || lineOf(b, 2) != 3 {
		t.Errorf("lineOf: %d %d, want 9 (the reader's) and 3 (row+1 when it gave none)", lineOf(b, 1), lineOf(b, 2))
	}
}
