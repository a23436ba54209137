package sqlast

func WordSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// ReservedInExpr are the words that cannot be a column, a function name or
// an alias without back quotes, because they end or continue an expression.
var ReservedInExpr = WordSet("select", "from", "where", "group", "having", "order", "limit",
	"union", "intersect", "except", "minus", "join", "on", "as", "and", "or", "with",
	"then", "else", "end", "when", "into", "values", "distinct", "is", "in", "like",
	"ilike", "rlike", "between", "not", "case", "null", "true", "false")

// SelectAliasStop are the words that end a select item rather than alias it.
var SelectAliasStop = union(ReservedInExpr, WordSet("offset", "window", "qualify", "over"))

// TableAliasStop are the words that follow a FROM source rather than alias it.
var TableAliasStop = union(ReservedInExpr, WordSet("left", "right", "full", "inner", "cross",
	"outer", "natural", "offset", "using", "window", "qualify", "lateral", "set",
	"options", "files", "subdirectory", "regexp"))

func union(sets ...map[string]bool) map[string]bool {
	m := map[string]bool{}
	for _, s := range sets {
		for w := range s {
			m[w] = true
		}
	}
	return m
}

// Redacted is what Redact writes in place of a hidden literal.
const Redacted = "'***'"
