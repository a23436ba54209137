package chsql

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// functions maps the ClickZetta Lakehouse (and common warehouse) function
// names to ClickHouse's. Other names pass through: in ClickHouse's own
// spelling when it has a function of that name (clickHouseName), else as
// written. Functions whose arguments or result need more than a new name
// are translated by call.
var functions = map[string]string{
	"count": "count", "sum": "sum", "avg": "avg", "min": "min", "max": "max",
	"upper": "upperUTF8", "lower": "lowerUTF8", "length": "lengthUTF8", "char_length": "lengthUTF8",
	"substr": "substringUTF8", "substring": "substringUTF8", "concat": "concat",
	"coalesce": "coalesce", "ifnull": "ifNull", "nvl": "ifNull", "nullif": "nullIf",
	"if": "if", "iff": "if", "abs": "abs", "round": "round", "floor": "floor", "ceil": "ceil",
	"now": "now", "today": "today",
	"to_date": "toDate", "date": "toDate", "to_timestamp": "toDateTime",
	"year": "toYear", "month": "toMonth", "day": "toDayOfMonth", "dayofmonth": "toDayOfMonth",
	"hour": "toHour", "minute": "toMinute", "second": "toSecond",
	"trim": "trimBoth", "ltrim": "trimLeft", "rtrim": "trimRight",
	"replace": "replaceAll", "stddev": "stddevSamp", "variance": "varSamp", "any_value": "any",
	"approx_count_distinct": "uniq", "row_number": "row_number", "rand": "rand",
}

func (t *Translator) call(b *strings.Builder, f *sqlast.FuncCall) error {
	if f.Over != nil {
		return &Unsupported{What: "window functions (OVER …) on this ClickHouse"}
	}
	name := strings.ToLower(f.Name)
	switch name {
	case "parse_json", "to_json", "json":
		// JSON values are kept as their text in ClickHouse.
		if len(f.Args) != 1 {
			return fmt.Errorf("%s takes one argument", strings.ToUpper(name))
		}
		return t.expr(b, f.Args[0])
	case "current_timestamp", "current_date":
		if len(f.Args) > 0 || f.Star {
			return fmt.Errorf("%s takes no arguments", strings.ToUpper(name))
		}
		b.WriteString(map[string]string{"current_timestamp": "now()", "current_date": "today()"}[name])
		return nil
	case "md5":
		return t.hexDigest(b, f, "MD5")
	case "sha", "sha1":
		return t.hexDigest(b, f, "SHA1")
	case "sha2":
		return t.sha2(b, f)
	case "split":
		return t.split(b, f)
	case "to_date", "to_timestamp":
		if len(f.Args) == 2 {
			return t.parseTime(b, f, name == "to_date", false)
		}
	case "try_to_date", "try_to_timestamp":
		if len(f.Args) == 2 {
			return t.parseTime(b, f, name == "try_to_date", true)
		}
		// Without a format, TRY_CAST: CAST to Nullable gives NULL where
		// ClickHouse cannot parse the text.
		if err := exactArgs(f, 1); err != nil {
			return err
		}
		typ := map[string]string{"try_to_date": "Nullable(Date)", "try_to_timestamp": "Nullable(DateTime)"}[name]
		b.WriteString("CAST(")
		if err := t.expr(b, f.Args[0]); err != nil {
			return err
		}
		b.WriteString(" AS " + typ + ")")
		return nil
	case "get_json_object":
		return &Unsupported{
			What: "get_json_object in queries run by ClickHouse",
			Hint: "ClickHouse 18.16 has no JSON path functions (its visitParam… functions find a key at any depth " +
				"and cannot index arrays, so they would give wrong values); Kafka pipes evaluate get_json_object",
		}
	}
	if err := CheckFunction(f.Name); err != nil {
		return err
	}
	if mapped, ok := functions[name]; ok {
		name = mapped
	} else if ch, ok := clickHouseName(name); ok && f.Name == name {
		// Unquoted, the name came lower-cased from the parser; ClickHouse
		// knows it in its own case only (toStartOfMonth, countIf).
		name = ch
	} else {
		name = f.Name
	}
	if !isPlainIdent(name) {
		return fmt.Errorf("function name %q is not valid", f.Name)
	}
	b.WriteString(name + "(")
	if f.Distinct {
		b.WriteString("DISTINCT ")
	}
	if f.Star {
		if name != "count" {
			return fmt.Errorf("%s(*) is not valid; only COUNT(*)", strings.ToUpper(f.Name))
		}
	}
	if err := t.args(b, f.Args); err != nil {
		return err
	}
	b.WriteString(")")
	return nil
}

// args writes expressions separated by commas.
func (t *Translator) args(b *strings.Builder, args []sqlast.Expr) error {
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := t.expr(b, a); err != nil {
			return err
		}
	}
	return nil
}

// exactArgs checks that f has n plain arguments.
func exactArgs(f *sqlast.FuncCall, n int) error {
	if len(f.Args) != n || f.Star || f.Distinct {
		return fmt.Errorf("%s takes %d argument(s)", strings.ToUpper(f.Name), n)
	}
	return nil
}

// hexDigest writes a hash function of the documentation, which returns
// lower-case hex digits, as ClickHouse's, which returns the raw bytes
// (FixedString): lower(hex(MD5(x))).
func (t *Translator) hexDigest(b *strings.Builder, f *sqlast.FuncCall, ch string) error {
	if err := exactArgs(f, 1); err != nil {
		return err
	}
	b.WriteString("lower(hex(" + ch + "(")
	if err := t.expr(b, f.Args[0]); err != nil {
		return err
	}
	b.WriteString(")))")
	return nil
}

// sha2 writes sha2(x, bits) for the bit lengths ClickHouse 18.16 has (224
// and 256; 0 means 256).
func (t *Translator) sha2(b *strings.Builder, f *sqlast.FuncCall) error {
	if err := exactArgs(f, 2); err != nil {
		return err
	}
	l, ok := f.Args[1].(*sqlast.Literal)
	bits := ""
	if ok && l.Kind == sqlast.LitNumber {
		bits = l.Value
	}
	switch bits {
	case "224":
		return t.hexDigest(b, &sqlast.FuncCall{Name: f.Name, Args: f.Args[:1]}, "SHA224")
	case "0", "256":
		return t.hexDigest(b, &sqlast.FuncCall{Name: f.Name, Args: f.Args[:1]}, "SHA256")
	}
	return &Unsupported{
		What: "SHA2 with a bit length of " + sqlast.FormatExpr(f.Args[1]),
		Hint: "ClickHouse 18.16 has SHA-224 and SHA-256 only: write 224 or 256",
	}
}

// split writes split(s, separator) as splitByString(separator, s). The
// documented separator is a regular expression, ClickHouse's a plain
// string (and 18.16 has no splitByRegexp): a literal separator without
// regular expression syntax, or with its metacharacters escaped (the
// regular expression \| is a |), is translated, any other refused.
// ClickHouse has no NULL arrays (an Array cannot be Nullable), so the
// split of NULL is the empty array.
func (t *Translator) split(b *strings.Builder, f *sqlast.FuncCall) error {
	if err := exactArgs(f, 2); err != nil {
		return fmt.Errorf("%w (text, separator; a limit is not supported)", err)
	}
	l, ok := f.Args[1].(*sqlast.Literal)
	if !ok || l.Kind != sqlast.LitString {
		return &Unsupported{What: "SPLIT with a separator that is not a string literal", Hint: "the separator is a regular expression, which ClickHouse cannot split by"}
	}
	if l.Value == "" {
		return &Unsupported{What: "SPLIT by an empty separator (into characters)", Hint: "ClickHouse 18.16 splits by a non-empty separator only"}
	}
	sep, ok := plainRegexp(l.Value)
	if !ok {
		return &Unsupported{
			What: fmt.Sprintf("SPLIT by the regular expression %s", QuoteString(l.Value)),
			Hint: "ClickHouse 18.16 splits by plain text only: use a separator without regular expression syntax, or escape it (\\\\|, \\\\.)",
		}
	}
	var s strings.Builder
	if err := t.expr(&s, f.Args[0]); err != nil {
		return err
	}
	b.WriteString("if(isNull(" + s.String() + "), emptyArrayString(), splitByString(" + QuoteString(sep) + ", assumeNotNull(" + s.String() + ")))")
	return nil
}

// plainRegexp returns the text a regular expression matches when it
// matches just one text, written without metacharacters except escaped
// ones (a\.b is a.b).
func plainRegexp(re string) (string, bool) {
	var out strings.Builder
	for i := 0; i < len(re); i++ {
		c := re[i]
		switch {
		case c == '\\':
			if i+1 == len(re) {
				return "", false
			}
			n := re[i+1]
			if n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z' || n >= '0' && n <= '9' || n >= 0x80 {
				return "", false // \d, \s, \1, \p…: classes and escapes
			}
			out.WriteByte(n)
			i++
		case strings.IndexByte(`.^$|?*+()[]{}`, c) >= 0:
			return "", false
		default:
			out.WriteByte(c)
		}
	}
	return out.String(), true
}

// parseTime writes to_date(s, format) and to_timestamp(s, format), and
// their try_ forms: the text is matched against a regular expression made
// from the format, rewritten into ClickHouse's own YYYY-MM-DD hh:mm:ss and
// cast. Text that does not match fails the query (throwIf), as the
// documented to_date fails, or gives NULL in the try_ forms. ClickHouse
// 18.16 has no function that parses by a format (parseDateTime came in
// 23.3), hence the regular expressions, which current releases run alike;
// 18.16's throwIf takes no message, so its error says only "Value passed
// to 'throwIf' function is non zero".
func (t *Translator) parseTime(b *strings.Builder, f *sqlast.FuncCall, date, try bool) error {
	name := strings.ToUpper(f.Name)
	if f.Star || f.Distinct {
		return fmt.Errorf("%s takes (text, format)", name)
	}
	l, ok := f.Args[1].(*sqlast.Literal)
	if !ok || l.Kind != sqlast.LitString {
		return &Unsupported{What: name + " with a format that is not a string literal"}
	}
	p, err := parseJavaFormat(l.Value)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var s strings.Builder
	if err := t.expr(&s, f.Args[0]); err != nil {
		return err
	}
	re := QuoteString("^" + p.re + "$")
	canon := "replaceRegexpOne(" + s.String() + ", " + re + ", " + QuoteString(p.replacement(date)) + ")"
	if p.pad {
		// One-digit fields (M, d, H, …) get their leading zero.
		canon = "replaceRegexpAll(" + canon + ", " + QuoteString(`\b(\d)\b`) + ", " + QuoteString(`0\1`) + ")"
	}
	typ := "Nullable(DateTime)"
	if date {
		typ = "Nullable(Date)"
	}
	match := "match(" + s.String() + ", " + re + ")"
	if try {
		b.WriteString("CAST(if(" + match + ", " + canon + ", NULL) AS " + typ + ")")
	} else {
		// NULL matches nothing and gives NULL.
		b.WriteString("CAST(if(throwIf(NOT ifNull(" + match + ", 1)), NULL, " + canon + ") AS " + typ + ")")
	}
	return nil
}

// javaFormat is a Java (Spark, ClickZetta) date format made a regular
// expression: group[c] is the capture group of field c (y, M, d, H, m, s),
// 0 when the format lacks it.
type javaFormat struct {
	re    string
	group map[byte]int
	pad   bool // a field may have one digit
}

// replacement returns the replacement (for replaceRegexpOne) that makes
// the matched text YYYY-MM-DD (date) or YYYY-MM-DD hh:mm:ss; fields the
// format lacks are the first month, day, hour… as in Java.
func (p *javaFormat) replacement(date bool) string {
	var r strings.Builder
	field := func(c byte, dflt string) {
		if g := p.group[c]; g > 0 {
			fmt.Fprintf(&r, `\%d`, g)
		} else {
			r.WriteString(dflt)
		}
	}
	field('y', "")
	r.WriteByte('-')
	field('M', "01")
	r.WriteByte('-')
	field('d', "01")
	if !date {
		r.WriteByte(' ')
		field('H', "00")
		r.WriteByte(':')
		field('m', "00")
		r.WriteByte(':')
		field('s', "00")
	}
	return r.String()
}

// parseJavaFormat reads a date format of the documentation (Java's
// DateTimeFormatter letters). Supported: yyyy (or y), M or MM, d or dd, H
// or HH, m or mm, s or ss, and S… after '.' or ',' (fractions of a second,
// which TIMESTAMP, seconds on ClickHouse, drops); other characters and
// text in single quotes are literal (two single quotes are one). Month and day names,
// 12-hour clocks, two-digit years and time zones are refused by name
// rather than read wrongly.
func parseJavaFormat(format string) (*javaFormat, error) {
	p := &javaFormat{group: map[byte]int{}}
	var re strings.Builder
	last := byte(0) // the last literal character, for S
	groups := 0
	for i := 0; i < len(format); {
		c := format[i]
		if c == '\'' {
			if i+1 < len(format) && format[i+1] == '\'' {
				re.WriteString("'") // '' is a quote
				last = '\''
				i += 2
				continue
			}
			var lit strings.Builder
			j := i + 1
			for ; j < len(format); j++ {
				if format[j] == '\'' {
					if j+1 < len(format) && format[j+1] == '\'' {
						lit.WriteByte('\'')
						j++
						continue
					}
					break
				}
				lit.WriteByte(format[j])
			}
			if j >= len(format) {
				return nil, fmt.Errorf("date format %s: unterminated quote", QuoteString(format))
			}
			re.WriteString(regexp.QuoteMeta(lit.String()))
			if lit.Len() > 0 {
				last = lit.String()[lit.Len()-1]
			}
			i = j + 1
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			re.WriteString(regexp.QuoteMeta(string(c)))
			last = c
			i++
			continue
		}
		n := 1
		for i+n < len(format) && format[i+n] == c {
			n++
		}
		i += n
		letters := strings.Repeat(string(c), n)
		unsupported := func(why string) error {
			return fmt.Errorf("date format %s: the pattern %q is not supported on ClickHouse (%s)", QuoteString(format), letters, why)
		}
		switch c {
		case 'y':
			if n != 1 && n != 4 {
				return nil, unsupported("write the year as yyyy")
			}
			re.WriteString(`(\d{4})`)
		case 'M', 'd', 'H', 'm', 's':
			switch n {
			case 1:
				re.WriteString(`(\d{1,2})`)
				p.pad = true
			case 2:
				re.WriteString(`(\d{2})`)
			default:
				return nil, unsupported("only numbers are: " + string(c) + " or " + string(c) + string(c))
			}
		case 'S':
			if last != '.' && last != ',' || n > 9 {
				return nil, unsupported("fractions of a second must follow '.' or ','")
			}
			re.WriteString(`\d{` + fmt.Sprint(n) + `}`)
			last = 0
			continue
		default:
			return nil, unsupported("supported: yyyy, MM, dd, HH, mm, ss, SSS and quoted text")
		}
		if p.group[c] > 0 {
			return nil, unsupported("given twice")
		}
		groups++
		p.group[c] = groups
		last = 0
	}
	if p.group['y'] == 0 {
		return nil, fmt.Errorf("date format %s has no year (yyyy)", QuoteString(format))
	}
	p.re = re.String()
	return p, nil
}
