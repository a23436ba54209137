package tunnel

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

var testColumns = []Column{
	{Name: "id", Type: "BIGINT", CHType: "Int64"},
	{Name: "name", Type: "STRING", CHType: "Nullable(String)"},
	{Name: "score", Type: "DOUBLE", CHType: "Float64"},
}

func TestBuilderRequest(t *testing.T) {
	f := newFakeServer(t, append(testColumns, Column{Name: "dt", Type: "STRING", CHType: "String", Partition: true}))
	c := f.client(t, WithSchema("analytics"))
	ctx := context.Background()

	s1, err := c.BuildStreamUploadSession("", "events").
		SetPartitionSpec("dt=20231001").
		SetCreatePartition(true).
		SetSchemaVersion("3").
		AllowSchemaMismatch(true).
		SetSlotNum(2).
		SetCompressor("lz4").
		Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := c.CreateStreamUploadSession(ctx, "", "events",
		WithPartitionKey("dt=20231001"),
		WithCreatePartition(),
		WithSchemaVersion("3"),
		WithAllowSchemaMismatch(true),
		WithSlotNum(2),
		WithCompressor("lz4"),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := CreateSessionRequest{Schema: "analytics", Table: "events", PartitionSpec: "dt=20231001",
		CreatePartition: true, SchemaVersion: "3", AllowSchemaMismatch: true, SlotNum: 2}
	if len(f.creates) != 2 || f.creates[0] != want || f.creates[1] != want {
		t.Fatalf("requests = %+v, want twice %+v", f.creates, want)
	}
	for _, s := range []*StreamUploadSession{s1, s2} {
		if s.ID() != "sess-1" || s.SchemaVersion() != "3" || s.compression != "lz4" {
			t.Errorf("session %v: id %q version %q compression %q", s, s.ID(), s.SchemaVersion(), s.compression)
		}
		// The partition column is fixed by the spec: not part of records.
		if got := s.Schema(); !reflect.DeepEqual(got, testColumns) {
			t.Errorf("Schema() = %+v, want %+v", got, testColumns)
		}
	}

	// Defaults: strict, no partition, server's choice of slots; an
	// explicit schema wins over WithSchema.
	if _, err := c.BuildStreamUploadSession("other", "t").Build(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.creates[2]; got != (CreateSessionRequest{Schema: "other", Table: "t"}) {
		t.Errorf("default request = %+v", got)
	}

	if err := s1.Close(ctx); err != nil || f.deletes != 1 {
		t.Errorf("Close: %v, %d deletes", err, f.deletes)
	}
}

func TestBuildRefusesBadSettingsBeforeAnyRequest(t *testing.T) {
	f := newFakeServer(t, testColumns)
	c := f.client(t)
	ctx := context.Background()
	if _, err := c.BuildStreamUploadSession("", "t").SetCompressor("gzip").Build(ctx); err == nil || !strings.Contains(err.Error(), "lz4") {
		t.Errorf("unknown compression: %v", err)
	}
	if _, err := c.BuildStreamUploadSession("", "").Build(ctx); err == nil {
		t.Error("no table: no error")
	}
	if _, err := c.BuildStreamUploadSession("", "t").SetSlotNum(-1).Build(ctx); err == nil {
		t.Error("negative slots: no error")
	}
	if len(f.creates) != 0 {
		t.Errorf("%d requests sent", len(f.creates))
	}
}

func TestUnauthorized(t *testing.T) {
	f := newFakeServer(t, testColumns)
	c, err := New(f.srv.URL, WithToken("wrong-token-42"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateStreamUploadSession(context.Background(), "", "t")
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || e.Code != CodeUnauthorized || e.TraceID == "" {
		t.Errorf("err = %#v", e)
	}
	// The fake server echoes the Authorization header it got: the client
	// must not pass the token on.
	if strings.Contains(err.Error(), "wrong-token-42") {
		t.Errorf("token in error: %v", err)
	}
	if strings.Contains(c.String(), "wrong-token-42") || !strings.Contains(c.String(), "token set") {
		t.Errorf("String() = %s", c)
	}

	// A flush refused the same way.
	good := f.client(t)
	s, err := good.CreateStreamUploadSession(context.Background(), "", "t")
	if err != nil {
		t.Fatal(err)
	}
	s.c = c // the token was revoked meanwhile
	p, _ := s.NewRecordPack()
	p.AppendRow(int64(1), "a", 1.0)
	_, err = p.Flush()
	if !errors.Is(err, ErrUnauthorized) || strings.Contains(err.Error(), "wrong-token-42") {
		t.Errorf("flush err = %v", err)
	}
	if p.RecordCount() != 1 {
		t.Errorf("rows after a refused flush: %d, want 1", p.RecordCount())
	}
}

func TestNewEndpoint(t *testing.T) {
	for _, bad := range []string{"", "localhost:8090", "ftp://x", "http://"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) succeeded", bad)
		}
	}
	_, err := New("http://user:hunter2@h:1")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("credentials in endpoint: %v", err)
	}
	c, err := New("http://gw:8080/lakepipe/")
	if err != nil || c.streamURL("a b", "/flush") != "http://gw:8080/lakepipe/v1/streams/a%20b/flush" {
		t.Errorf("New with prefix: %v %v", c, err)
	}
}

func TestErrorIs(t *testing.T) {
	cases := []struct {
		e    *Error
		want error
	}{
		{&Error{Status: 409, Code: CodeSchemaMismatch}, ErrSchemaMismatch},
		{&Error{Status: 401}, ErrUnauthorized},
		{&Error{Status: 404, Code: CodeNoSuchPartition}, ErrNoSuchPartition},
		{&Error{Status: 404, Code: CodeNoSuchSession}, ErrNoSuchSession},
		{&Error{Status: 413}, ErrTooLarge},
		{&Error{Status: 413, Code: CodeTooLarge}, ErrTooLarge},
	}
	all := []error{ErrSchemaMismatch, ErrUnauthorized, ErrNoSuchPartition, ErrNoSuchSession, ErrTooLarge}
	for _, c := range cases {
		for _, s := range all {
			if got := errors.Is(c.e, s); got != (s == c.want) {
				t.Errorf("errors.Is(%v, %v) = %v", c.e, s, got)
			}
		}
	}
	if !IsSchemaMismatch(errors.Join(errors.New("x"), &Error{Status: 409, Code: CodeSchemaMismatch})) {
		t.Error("IsSchemaMismatch of a wrapped mismatch is false")
	}
}

func TestGetSession(t *testing.T) {
	f := newFakeServer(t, testColumns)
	c := f.client(t)
	s, err := c.GetStreamUploadSession(context.Background(), "sess-1")
	if err != nil || s.ID() != "sess-1" || len(s.Schema()) != 3 {
		t.Fatalf("GetStreamUploadSession: %v, %v", s, err)
	}
	if _, err := c.GetStreamUploadSession(context.Background(), "gone"); !errors.Is(err, ErrNoSuchSession) {
		t.Errorf("unknown session: %v", err)
	}
}
