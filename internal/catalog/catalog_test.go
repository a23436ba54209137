package catalog

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/chstore"
)

func TestObjectDecode(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		want    VolumeSpec
		wantErr string // substring; "" for success
	}{
		{"valid", `{"location":"s3://b/p","connection":"c","directory_enable":true}`,
			VolumeSpec{Location: "s3://b/p", Connection: "c", DirectoryEnable: true}, ""},
		{"unknown fields ignored", `{"location":"l","future_field":1}`, VolumeSpec{Location: "l"}, ""},
		{"not json", `{"location":`, VolumeSpec{}, "catalog volume s.v: unexpected end of JSON input"},
		{"wrong type", `{"location":5}`, VolumeSpec{}, "catalog volume s.v: json: cannot unmarshal number"},
		{"empty spec", ``, VolumeSpec{}, "catalog volume s.v: unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Object{Kind: KindVolume, Schema: "s", Name: "v", Spec: json.RawMessage(tt.spec)}
			var got VolumeSpec
			err := o.Decode(&got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestWhereQuotesHostileNames checks the condition every catalog query is
// built from: names come from users, so each must stay one string literal
// whatever it holds.
func TestWhereQuotesHostileNames(t *testing.T) {
	tests := []struct {
		kind         Kind
		schema, name string
		want         string
	}{
		{KindTable, "public", "orders", `kind = 'table' AND schema = 'public' AND name = 'orders'`},
		{KindConnection, "", "c", `kind = 'connection' AND schema = '' AND name = 'c'`},
		{KindTable, "public", "", `kind = 'table' AND schema = 'public'`}, // List: the whole schema
		{KindTable, "s", "x' OR 1=1 --", `kind = 'table' AND schema = 's' AND name = 'x\' OR 1=1 --'`},
		{KindTable, "s", `a\' OR '1'='1`, `kind = 'table' AND schema = 's' AND name = 'a\\\' OR \'1\'=\'1'`},
		{KindTable, "s", `trailing\`, `kind = 'table' AND schema = 's' AND name = 'trailing\\'`},
		{KindTable, "s'", "n", `kind = 'table' AND schema = 's\'' AND name = 'n'`},
		{KindTable, "s", "line\nbreak\ttab\rcr", `kind = 'table' AND schema = 's' AND name = 'line\nbreak\ttab\rcr'`},
		{KindTable, "s", "nul\x00byte", `kind = 'table' AND schema = 's' AND name = 'nul\0byte'`},
		{KindTable, "s", "`back`", "kind = 'table' AND schema = 's' AND name = '`back`'"},
		{KindTable, "схема", "名前 🎉", `kind = 'table' AND schema = 'схема' AND name = '名前 🎉'`},
		{Kind("it's"), "s", "n", `kind = 'it\'s' AND schema = 's' AND name = 'n'`},
	}
	for _, tt := range tests {
		if got := where(tt.kind, tt.schema, tt.name); got != tt.want {
			t.Errorf("where(%q, %q, %q)\n got %s\nwant %s", tt.kind, tt.schema, tt.name, got, tt.want)
		}
	}
}

func TestVersionCheck(t *testing.T) {
	tests := []struct {
		kind         Kind
		schema, name string
		version      uint64
		want         string
	}{
		{KindStream, "public", "s1", 42,
			`throwIf((SELECT max(version) FROM lakepipe.objects WHERE kind = 'table_stream' AND schema = 'public' AND name = 's1') != 42) = 0`},
		{KindStream, "public", "x') != 0) = 0 OR (1", 18446744073709551615,
			`throwIf((SELECT max(version) FROM lakepipe.objects WHERE kind = 'table_stream' AND schema = 'public' AND name = 'x\') != 0) = 0 OR (1') != 18446744073709551615) = 0`},
		// Version 0 is "never there": a check for it throws once the object exists.
		{KindTable, "s", "t", 0,
			`throwIf((SELECT max(version) FROM lakepipe.objects WHERE kind = 'table' AND schema = 's' AND name = 't') != 0) = 0`},
	}
	for _, tt := range tests {
		if got := VersionCheck(tt.kind, tt.schema, tt.name, tt.version); got != tt.want {
			t.Errorf("VersionCheck(%q, %q, %q, %d)\n got %s\nwant %s", tt.kind, tt.schema, tt.name, tt.version, got, tt.want)
		}
	}
}

// TestKeysSeparateParts checks that cacheKey and secretAAD tell apart
// objects whose parts only differ in where one ends and the next starts;
// a collision in secretAAD would let a sealed secret open as another
// object's.
func TestKeysSeparateParts(t *testing.T) {
	type obj struct {
		kind         Kind
		schema, name string
	}
	tests := []struct{ a, b obj }{
		{obj{KindPipe, "ab", "c"}, obj{KindPipe, "a", "bc"}},
		{obj{KindPipe, "", "ab"}, obj{KindPipe, "ab", ""}},
		{obj{KindTable, "s", "t"}, obj{KindDroppedTable, "s", "t"}},
		{obj{KindConnection, "", "c"}, obj{KindPipe, "", "c"}},
		{obj{KindTable, "s", "t"}, obj{KindTable, "S", "t"}},
	}
	for _, tt := range tests {
		if cacheKey(tt.a.kind, tt.a.schema, tt.a.name) == cacheKey(tt.b.kind, tt.b.schema, tt.b.name) {
			t.Errorf("cacheKey(%v) == cacheKey(%v)", tt.a, tt.b)
		}
		if string(secretAAD(tt.a.kind, tt.a.schema, tt.a.name)) == string(secretAAD(tt.b.kind, tt.b.schema, tt.b.name)) {
			t.Errorf("secretAAD(%v) == secretAAD(%v)", tt.a, tt.b)
		}
	}
	// Sealed secrets already stored depend on the exact bytes.
	if got, want := string(secretAAD(KindConnection, "", "s3")), "connection\x00\x00s3"; got != want {
		t.Errorf("secretAAD = %q, want %q", got, want)
	}
}

func TestScrubbed(t *testing.T) {
	base := &chstore.Exception{Code: 27, Msg: "Cannot parse input: 'hunter2' in row 1, also hunter2"}
	tests := []struct {
		name, secret, want string
	}{
		{"no secret keeps the error", "", "ClickHouse error 27: Cannot parse input: 'hunter2' in row 1, also hunter2"},
		{"every occurrence hidden", "hunter2", "ClickHouse error 27: Cannot parse input: '***' in row 1, also ***"},
		{"secret not in the text", "swordfish", "ClickHouse error 27: Cannot parse input: 'hunter2' in row 1, also hunter2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scrubbed(base, tt.secret)
			if got.Error() != tt.want {
				t.Errorf("scrubbed = %q, want %q", got, tt.want)
			}
			switch {
			case tt.secret == "":
				// Nothing to hide: callers can still tell ClickHouse's codes.
				if !chstore.IsCode(got, 27) {
					t.Errorf("scrubbed without a secret lost the exception: %#v", got)
				}
			case strings.Contains(base.Error(), tt.secret):
				// The original text, secret included, must not stay
				// reachable through Unwrap.
				if errors.Unwrap(got) != nil || chstore.IsCode(got, 27) {
					t.Errorf("scrubbed error still wraps the original: %#v", got)
				}
			}
		})
	}
}

// TestSpecEncoding pins the JSON the catalog stores: specs written by
// earlier releases are read by later ones, so a renamed field or tag loses
// data that is already in ClickHouse.
func TestSpecEncoding(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	zero := `"0001-01-01T00:00:00Z"`
	tests := []struct {
		name string
		spec any
		want string
	}{
		{"connection", ConnectionSpec{Type: "S3", Endpoint: "http://s3:9000", Region: "us-east-1", AccessID: "AKIA", Comment: "c", CreatedAt: at},
			`{"type":"S3","endpoint":"http://s3:9000","region":"us-east-1","access_id":"AKIA","comment":"c","created_at":"2025-03-04T05:06:07Z"}`},
		{"connection minimal", ConnectionSpec{Type: "OSS", Endpoint: "e", AccessID: "id"},
			`{"type":"OSS","endpoint":"e","access_id":"id","created_at":` + zero + `}`},
		{"volume", VolumeSpec{Location: "s3://b/p/", Connection: "c", DirectoryEnable: true, AutoRefresh: true, Recursive: true, RefreshID: 9, RefreshedAt: at, CreatedAt: at},
			`{"location":"s3://b/p/","connection":"c","directory_enable":true,"auto_refresh":true,"recursive":true,"created_at":"2025-03-04T05:06:07Z","refresh_id":9,"refreshed_at":"2025-03-04T05:06:07Z"}`},
		// omitempty does not leave out a zero time.Time (a struct).
		{"volume minimal", VolumeSpec{Location: "l", Connection: "c"},
			`{"location":"l","connection":"c","directory_enable":false,"auto_refresh":false,"recursive":false,"created_at":` + zero + `,"refreshed_at":` + zero + `}`},
		{"table", TableSpec{Columns: []ColumnSpec{{Name: "id", Type: "BIGINT", CHType: "Nullable(Int64)", Comment: "k"}}, PartitionBy: []string{"d"}, Properties: map[string]string{"b": "2", "a": "1"}, SchemaVersion: 2, CreatedAt: at},
			`{"columns":[{"name":"id","type":"BIGINT","ch_type":"Nullable(Int64)","comment":"k"}],"partition_by":["d"],"properties":{"a":"1","b":"2"},"created_at":"2025-03-04T05:06:07Z","schema_version":2}`},
		{"dropped table", DroppedTableSpec{Table: TableSpec{}, Schema: "s", Name: "t", DroppedAt: at},
			`{"table":{"columns":null,"created_at":` + zero + `,"schema_version":0},"schema":"s","name":"t","dropped_at":"2025-03-04T05:06:07Z"}`},
		{"pipe", PipeSpec{Kind: "KAFKA", Properties: map[string]string{"batch_interval_in_seconds": "5"}, CopyStatement: "COPY INTO t FROM (SELECT 1)", Input: "topic", Output: "ws.s.t", KafkaGroup: "g", KafkaBootstrap: "k:9092", CreatedAt: at},
			`{"kind":"KAFKA","properties":{"batch_interval_in_seconds":"5"},"copy_statement":"COPY INTO t FROM (SELECT 1)","input_name":"topic","output_name":"ws.s.t","kafka_group_id":"g","kafka_bootstrap":"k:9092","created_at":"2025-03-04T05:06:07Z"}`},
		{"dynamic table", DynamicTableSpec{Query: "SELECT 1", Interval: "1 MINUTE", IntervalSeconds: 60, VCluster: "vc", Sources: []string{"s.t"}, ChangeVersion: 7, StateOf: "s.t@1", CreatedAt: at},
			`{"query":"SELECT 1","interval":"1 MINUTE","interval_seconds":60,"vcluster":"vc","source_tables":["s.t"],"change_version":7,"state_of":"s.t@1","created_at":"2025-03-04T05:06:07Z"}`},
		{"stream", StreamSpec{Table: "s.t", Mode: "APPEND_ONLY", ShowInitialRows: true, Offset: 12, CreatedAt: at, ConsumedAt: at, TableCreatedAt: at},
			`{"table":"s.t","mode":"APPEND_ONLY","show_initial_rows":true,"offset":12,"created_at":"2025-03-04T05:06:07Z","consumed_at":"2025-03-04T05:06:07Z","table_created_at":"2025-03-04T05:06:07Z"}`},
		// Write tokens have no tags: their keys are the Go field names.
		{"write token", WriteTokenSpec{Scope: "table:s.t", Hash: "ab12", CreatedAt: at},
			`{"Scope":"table:s.t","Hash":"ab12","CreatedAt":"2025-03-04T05:06:07Z"}`},
		{"write token with comment", WriteTokenSpec{Scope: "all", Hash: "h", Comment: "ci"},
			`{"Scope":"all","Hash":"h","CreatedAt":` + zero + `,"Comment":"ci"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("encoding\n got %s\nwant %s", got, tt.want)
			}
			// And back: what was stored reads as the same spec.
			back := reflect.New(reflect.TypeOf(tt.spec))
			if err := (Object{Spec: got}).Decode(back.Interface()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Elem().Interface(), tt.spec) {
				t.Errorf("round trip\n got %+v\nwant %+v", back.Elem().Interface(), tt.spec)
			}
		})
	}
}

// TestSpecsHoldNoSecret checks that no spec type has a field for a secret:
// specs are what listings and DESC print, secrets live in their own column.
func TestSpecsHoldNoSecret(t *testing.T) {
	for _, spec := range []any{ConnectionSpec{}, VolumeSpec{}, TableSpec{}, ColumnSpec{}, DroppedTableSpec{}, PipeSpec{}, DynamicTableSpec{}, StreamSpec{}, WriteTokenSpec{}} {
		typ := reflect.TypeOf(spec)
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name := strings.ToLower(f.Name + " " + f.Tag.Get("json"))
			for _, bad := range []string{"secret", "password", "access_key", "accesskey", "token"} {
				if strings.Contains(name, bad) {
					t.Errorf("%s.%s (json %q) looks like a secret", typ.Name(), f.Name, f.Tag.Get("json"))
				}
			}
		}
	}
}

func TestKinds(t *testing.T) {
	// The kind strings are stored in every row of lakepipe.objects.
	want := map[Kind]string{
		KindConnection: "connection", KindVolume: "volume", KindTable: "table",
		KindDroppedTable: "dropped_table", KindPipe: "pipe", KindDynamicTable: "dynamic_table",
		KindStream: "table_stream", KindStreamSession: "stream_session", KindWriteToken: "write_token",
	}
	for k, s := range want {
		if string(k) != s {
			t.Errorf("kind %q, want %q", string(k), s)
		}
	}
	// Only connections and pipes carry a secret; writes of those kinds
	// clean up older secret rows.
	for k := range want {
		if got, wantSecret := secretKinds[k], k == KindConnection || k == KindPipe; got != wantSecret {
			t.Errorf("secretKinds[%s] = %v, want %v", k, got, wantSecret)
		}
	}
}

func TestNextVersionIncreases(t *testing.T) {
	prev := nextVersion()
	for i := 0; i < 10000; i++ {
		v := nextVersion()
		if v <= prev {
			t.Fatalf("nextVersion went from %d to %d", prev, v)
		}
		prev = v
	}
	if now := uint64(time.Now().UnixNano()); prev > now+uint64(time.Second) {
		t.Errorf("nextVersion %d is far ahead of the clock %d", prev, now)
	}
}
