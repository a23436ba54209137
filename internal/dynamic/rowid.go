package dynamic

import (
	"regexp"
	"strings"

	"github.com/lakepipe/lakepipe/internal/chsql"
)

// rowColumn is the column of an append plan's state holding the identity
// of the source row each row came from, within its commit (srcColumn): a
// hash of the source row's values (rowHash). A DELETE or UPDATE removes a
// row with its identity, and its rows in the state are found by the pair
// (commit, identity), whatever else the commit holds.
//
// Two rows of one commit with the same values have one identity. That is
// exact for what removes rows: a DELETE's or UPDATE's condition is a
// function of the row, so it removes both or neither, and the change log
// records what it removes by the same condition (changes.SaveRemoved). A
// hash collision within one commit (2^-64 per pair of rows) would take
// back the rows of a row that is still there.
const rowColumn = "_lp_row"

// nativeHashed matches the ClickHouse types whose values cityHash64 hashes
// as they are on every release, 18.16 included (which refuses Nullable,
// Decimal and UUID arguments); other values are hashed as their text.
var nativeHashed = regexp.MustCompile(`^(Array\()*(U?Int(8|16|32|64)|Float(32|64)|String|FixedString\(\d+\)|Date|DateTime(\('[^']*'\))?|Enum(8|16)\(.*\))\)*$`)

// rowHash is the SQL of a row's identity in src or its change table: the
// source table and its change table have the same columns, so the
// identity of a removed row, computed from the change table, is the one
// its rows in the state carry.
func (src incSource) rowHash() string { return rowHash(src.cols, src.types) }

// rowHash is cityHash64 of the columns cols of ClickHouse types types.
func rowHash(cols, types []string) string {
	args := make([]string, 0, len(cols))
	for i, c := range cols {
		ref := chsql.QuoteIdent(c)
		t := ""
		if i < len(types) {
			t = types[i]
		}
		switch {
		case nativeHashed.MatchString(t):
			args = append(args, ref)
		case strings.HasPrefix(t, "Nullable("):
			// NULL and a value whose text is empty hash apart.
			args = append(args, "isNull("+ref+")", "ifNull(toString("+ref+"), '')")
		default:
			args = append(args, "toString("+ref+")")
		}
	}
	if len(args) == 0 {
		return "toUInt64(0)"
	}
	return "cityHash64(" + strings.Join(args, ", ") + ")"
}
