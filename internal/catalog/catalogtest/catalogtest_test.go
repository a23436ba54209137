package catalogtest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/catalog"
)

func TestReads(t *testing.T) {
	ctx := context.Background()
	sales := catalog.TableSpec{Columns: []catalog.ColumnSpec{{Name: "id", Type: "INT", CHType: "Int32"}}}
	c := New(t,
		Object(t, catalog.KindTable, "public", "sales", 7, sales),
		Object(t, catalog.KindTable, "public", "b's", 0, catalog.TableSpec{Comment: "odd name"}),
		Object(t, catalog.KindTable, "other", "events", 9, catalog.TableSpec{}),
		Object(t, catalog.KindDynamicTable, "public", "summary", 11, catalog.DynamicTableSpec{Query: "SELECT 1"}),
		Object(t, catalog.KindConnection, "", "s3", 12, catalog.ConnectionSpec{Type: "S3"}),
	)

	var got catalog.TableSpec
	if ok, err := c.Get(ctx, catalog.KindTable, "public", "sales", &got); err != nil || !ok || !reflect.DeepEqual(got, sales) {
		t.Errorf("Get sales = %v, %v, %+v", ok, err, got)
	}
	if ok, err := c.Get(ctx, catalog.KindTable, "public", "b's", &got); err != nil || !ok || got.Comment != "odd name" {
		t.Errorf("Get b's = %v, %v, %+v", ok, err, got)
	}
	if ok, err := c.Get(ctx, catalog.KindTable, "public", "summary", &got); err != nil || ok {
		t.Errorf("Get of a dynamic table as a table = %v, %v", ok, err)
	}
	if v, ok, err := c.GetCached(ctx, catalog.KindTable, "public", "sales", &got); err != nil || !ok || v != 7 {
		t.Errorf("GetCached sales = %d, %v, %v", v, ok, err)
	}

	names := func(objs []catalog.Object, err error) string {
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, o := range objs {
			out = append(out, fmt.Sprintf("%s %s.%s@%d", o.Kind, o.Schema, o.Name, o.Version))
		}
		return strings.Join(out, ", ")
	}
	// The object without a version got its position plus one.
	if got, want := names(c.List(ctx, catalog.KindTable, "public")), "table public.b's@2, table public.sales@7"; got != want {
		t.Errorf("List = %s, want %s", got, want)
	}
	if got, want := names(c.ListAll(ctx, catalog.KindTable)), "table public.b's@2, table other.events@9, table public.sales@7"; got != want {
		t.Errorf("ListAll = %s, want %s", got, want)
	}
	if got, want := names(c.List(ctx, catalog.KindConnection, "")), "connection .s3@12"; got != want {
		t.Errorf("List connections = %s, want %s", got, want)
	}

	vs, err := c.Versions(ctx, []catalog.Ref{{Kind: catalog.KindTable, Schema: "public", Name: "sales"},
		{Kind: catalog.KindTable, Schema: "public", Name: "none"}, {Kind: catalog.KindDynamicTable, Schema: "public", Name: "summary"}})
	if err != nil || !reflect.DeepEqual(vs, []uint64{7, 0, 11}) {
		t.Errorf("Versions = %v, %v", vs, err)
	}
	if s, err := c.Secret(ctx, catalog.KindConnection, "", "s3"); err != nil || s != "" {
		t.Errorf("Secret = %q, %v", s, err)
	}
}

func TestWrites(t *testing.T) {
	ctx := context.Background()
	c := New(t, Object(t, catalog.KindTable, "public", "sales", 1, catalog.TableSpec{Comment: "old"}))
	if err := c.Put(ctx, catalog.KindTable, "public", "sales", catalog.TableSpec{Comment: "new"}, ""); err != nil {
		t.Fatal(err)
	}
	var got catalog.TableSpec
	if ok, err := c.Get(ctx, catalog.KindTable, "public", "sales", &got); err != nil || !ok || got.Comment != "new" {
		t.Errorf("Get after Put = %v, %v, %+v", ok, err, got)
	}
	if err := c.Put(ctx, catalog.KindPipe, "public", "p", catalog.PipeSpec{}, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, catalog.KindPipe, "public", "p", catalog.PipeSpec{}, "key"); err == nil {
		t.Error("Put of a secret without a sealer succeeded")
	}
	before, _ := c.Versions(ctx, []catalog.Ref{{Kind: catalog.KindTable, Schema: "public", Name: "sales"}})
	if err := c.Delete(ctx, catalog.KindTable, "public", "sales"); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Get(ctx, catalog.KindTable, "public", "sales", &got); err != nil || ok {
		t.Errorf("Get after Delete = %v, %v", ok, err)
	}
	after, _ := c.Versions(ctx, []catalog.Ref{{Kind: catalog.KindTable, Schema: "public", Name: "sales"}})
	if len(before) != 1 || len(after) != 1 || after[0] <= before[0] {
		t.Errorf("versions before and after the drop: %v, %v (a drop is a write)", before, after)
	}
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Helper() {}

func TestRefusesOtherStatements(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		run  func(s *store) error
	}{
		{"exec", func(s *store) error { return s.Exec(ctx, "DROP TABLE lakepipe.objects") }},
		{"query", func(s *store) error { _, err := s.Query(ctx, "SELECT * FROM lakepipe.objects"); return err }},
		{"query-other-condition", func(s *store) error {
			_, err := s.Query(ctx, listHead+"kind = 'table' AND updated_at > now()"+listTail)
			return err
		}},
		{"strings", func(s *store) error { _, err := s.Strings(ctx, "SELECT 1"); return err }},
		{"insert", func(s *store) error { return s.InsertRows(ctx, "lakepipe", "meta", []string{"key"}, nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			s := &store{t: r, objects: map[key]row{}}
			if err := tt.run(s); err == nil || len(r.errs) != 1 {
				t.Errorf("err = %v, test errors %q: want the statement refused and the test failed", err, r.errs)
			}
		})
	}
}
