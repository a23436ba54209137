package fileread

import (
	"context"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// load_history's argument is checked before the catalog is asked (the
// Reader here has none): a bad call is the user's error, named as such.
// What it renders for a good call needs the table's spec from the
// catalog, so it is not tested here.
func TestLoadHistorySourceArguments(t *testing.T) {
	str := &sqlast.Literal{Kind: sqlast.LitString, Value: "t"}
	cases := []struct {
		name    string
		args    []sqlast.Expr
		wantErr string
	}{
		{name: "no argument", args: nil, wantErr: "load_history takes the table name, as in"},
		{name: "two arguments", args: []sqlast.Expr{str, str}, wantErr: "load_history takes the table name, as in"},
		{name: "a number", args: []sqlast.Expr{&sqlast.Literal{Kind: sqlast.LitNumber, Value: "1"}}, wantErr: "load_history takes the table name as a string"},
		{name: "a column", args: []sqlast.Expr{&sqlast.ColumnRef{Parts: []string{"t"}}}, wantErr: "load_history takes the table name as a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var e Reader
			_, err := e.LoadHistorySource(context.Background(), &sqlast.FuncCall{Name: "load_history", Args: c.args})
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, c.wantErr)
			}
		})
	}
}
