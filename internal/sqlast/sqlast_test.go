package sqlast

import (
	"reflect"
	"testing"
)

// The parser's tests round-trip every statement through Format; these
// check the tree's own operations on trees built by hand, so that a bug
// here is reported here and not as a parse failure.

func TestFormatQuotesWhatNeedsIt(t *testing.T) {
	tests := []struct {
		parts []string
		want  string
	}{
		{[]string{"sales"}, "sales"},
		{[]string{"public", "sales"}, "public.sales"},
		{[]string{"select"}, "`select`"}, // a keyword
		{[]string{"Sales"}, "`Sales`"},   // kept case
		{[]string{"a b"}, "`a b`"},       // a space
		{[]string{"a`b"}, "`a``b`"},      // a quote, doubled
		{[]string{"1st"}, "`1st`"},       // not an identifier's start
		{[]string{"订单"}, "`订单`"},         // beyond ASCII
		{[]string{"from", "where"}, "`from`.`where`"},
	}
	for _, tt := range tests {
		got := Format(&DropTable{Name: ObjectName{Parts: tt.parts}})
		if want := "DROP TABLE " + tt.want; got != want {
			t.Errorf("%q: %s, want %s", tt.parts, got, want)
		}
	}
}

func TestFormatExprLiterals(t *testing.T) {
	tests := []struct {
		e    Expr
		want string
	}{
		{&Literal{Kind: LitString, Value: "it's"}, "'it''s'"},
		{&Literal{Kind: LitString, Value: "a\\b\nc\x00"}, `'a\\b\nc\0'`},
		{&Literal{Kind: LitNumber, Value: "42"}, "42"},
		{&BinaryExpr{Op: "+", L: &ColumnRef{Parts: []string{"a"}}, R: &Literal{Kind: LitNumber, Value: "1"}}, "a + 1"},
	}
	for _, tt := range tests {
		got := FormatExpr(tt.e)
		if got != tt.want {
			t.Errorf("FormatExpr(%#v) = %s, want %s", tt.e, got, tt.want)
		}
	}
}

// Inspect visits in source order and prunes below a node for which f
// returns false.
func TestInspect(t *testing.T) {
	where := &BinaryExpr{Op: ">", L: &ColumnRef{Parts: []string{"b"}}, R: &Literal{Kind: LitNumber, Value: "1"}}
	q := &QueryStmt{Query: &Query{Body: &Select{
		Items: []SelectItem{{Expr: &ColumnRef{Parts: []string{"a"}}}},
		From:  []TableRef{&TableName{Name: ObjectName{Parts: []string{"t"}}}},
		Where: where,
	}}}
	var cols []string
	Inspect(q, func(n any) bool {
		if c, ok := n.(*ColumnRef); ok {
			cols = append(cols, c.Parts[0])
		}
		return true
	})
	if want := []string{"a", "b"}; !reflect.DeepEqual(cols, want) {
		t.Errorf("columns in order %v, want %v", cols, want)
	}
	cols = nil
	Inspect(q, func(n any) bool {
		if c, ok := n.(*ColumnRef); ok {
			cols = append(cols, c.Parts[0])
		}
		return n != where // prune the WHERE
	})
	if want := []string{"a"}; !reflect.DeepEqual(cols, want) {
		t.Errorf("columns with WHERE pruned %v, want %v", cols, want)
	}
}

func TestRedactRanges(t *testing.T) {
	text := "CREATE STORAGE CONNECTION c TYPE S3 ACCESS_ID = 'id' ACCESS_KEY = 'k''ey'"
	s := &DropTable{} // any statement: Redact reads only its span's text
	s.SetSpan(Pos{}, text)
	id := Range{Start: 48, End: 52}
	key := Range{Start: 66, End: 73}
	if text[id.Start:id.End] != "'id'" || text[key.Start:key.End] != "'k''ey'" {
		t.Fatalf("ranges %q %q", text[id.Start:id.End], text[key.Start:key.End])
	}
	got := Redact(s, []Range{key, id})
	want := "CREATE STORAGE CONNECTION c TYPE S3 ACCESS_ID = '***' ACCESS_KEY = '***'"
	if got != want {
		t.Errorf("Redact = %s\nwant %s", got, want)
	}
	if got := Redact(s, nil); got != text {
		t.Errorf("Redact with nothing to hide changed the text: %s", got)
	}
}
