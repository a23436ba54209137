package sqlparse

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// as asserts that v has type T.
func as[T any](t *testing.T, v any) T {
	t.Helper()
	x, ok := v.(T)
	if !ok {
		var zero T
		t.Fatalf("got %T, want %T", v, zero)
	}
	return x
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

func name(parts ...string) sqlast.ObjectName { return sqlast.ObjectName{Parts: parts} }

func str(s string) *string { return &s }

// kv renders properties as key=value, without positions.
func kv(props []sqlast.Property) []string {
	var out []string
	for _, p := range props {
		out = append(out, p.Key+"="+p.Value)
	}
	return out
}

// cols renders column definitions canonically.
func cols(cs []sqlast.ColumnDef) []string {
	var out []string
	for _, c := range cs {
		out = append(out, sqlast.FormatColumnDef(c))
	}
	return out
}

func formatItems(items []sqlast.SelectItem) string {
	s := sqlast.FormatSelect(&sqlast.Select{Items: items})
	return strings.TrimPrefix(s, "SELECT ")
}

func mustParse(t *testing.T, src string) sqlast.Statement {
	t.Helper()
	s, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return s
}

var (
	posType       = reflect.TypeOf(sqlast.Pos{})
	rangeType     = reflect.TypeOf(sqlast.Range{})
	stmtBaseType  = reflect.TypeOf(sqlast.StmtBase{})
	queryTextName = "QueryText"
)

// clearSpans zeroes, everywhere in the tree under v, what depends on where
// the source text came from rather than on what it says: StmtBase, Pos and
// Range fields and CreateDynamicTable.QueryText.
func clearSpans(v any) {
	clearValue(reflect.ValueOf(v))
}

// unspanned clears the spans under v (in place) and returns it, for
// comparing a parsed node with one built by hand.
func unspanned[T any](v T) T {
	clearSpans(v)
	return v
}

func clearValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			clearValue(v.Elem())
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			clearValue(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == posType || v.Type() == rangeType || v.Type() == stmtBaseType {
			if v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if v.Type().Field(i).Name == queryTextName && f.Kind() == reflect.String && f.CanSet() {
				f.SetString("")
				continue
			}
			clearValue(f)
		}
	}
}

// checkRoundTrip asserts that Format(s) parses back into the same tree and
// that formatting is then stable.
func checkRoundTrip(t *testing.T, s sqlast.Statement) {
	t.Helper()
	text := sqlast.Format(s)
	s2, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse(Format(s)) failed: %v\nformatted: %s", err, text)
	}
	if text2 := sqlast.Format(s2); text2 != text {
		t.Errorf("Format is not stable:\n first: %s\nsecond: %s", text, text2)
	}
	clearSpans(s)
	clearSpans(s2)
	if !reflect.DeepEqual(s, s2) {
		t.Errorf("round trip changed the tree\nformatted: %s\n before: %s\n  after: %s", text, dump(s), dump(s2))
	}
}

// dump renders a tree for failure messages.
func dump(v any) string {
	var b strings.Builder
	dumpValue(&b, reflect.ValueOf(v))
	return b.String()
}

func dumpValue(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		if v.Kind() == reflect.Pointer {
			b.WriteString("&")
		}
		dumpValue(b, v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString("[")
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			dumpValue(b, v.Index(i))
		}
		b.WriteString("]")
	case reflect.Struct:
		b.WriteString(v.Type().Name() + "{")
		first := true
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if f.IsZero() {
				continue
			}
			if !first {
				b.WriteString(" ")
			}
			first = false
			b.WriteString(v.Type().Field(i).Name + ":")
			dumpValue(b, f)
		}
		b.WriteString("}")
	case reflect.String:
		b.WriteString(`"` + v.String() + `"`)
	default:
		fmt.Fprint(b, v)
	}
}
