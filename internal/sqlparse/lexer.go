package sqlparse

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lakepipe/lakepipe/internal/sqlast"
)

// tokKind classifies a token.
type tokKind int

const (
	tEOF     tokKind = iota
	tWord            // unquoted identifier or keyword
	tQIdent          // `back-quoted` or "double-quoted" identifier
	tString          // '…' literal
	tNumber          // 1, 1.5, .5, 1e3
	tOp              // punctuation and operators
	tIllegal         // a character the dialect does not use
)

// token is one lexical token. Positions are absolute: they already include
// the base position the text was lexed from.
type token struct {
	kind  tokKind
	text  string // raw source text
	val   string // word: lower-cased; quoted identifier or string: content; number/op: text
	upper string // word: upper-cased, for keyword comparison
	pos   sqlast.Pos
	end   int // absolute byte offset just after the token
}

// lexer turns source text into tokens, skipping whitespace and comments.
type lexer struct {
	src  string
	base sqlast.Pos
	i    int // byte index into src
	line int
	col  int
}

// pos returns the absolute position of the lexer's current byte.
func (l *lexer) pos() sqlast.Pos {
	return sqlast.Pos{Offset: l.base.Offset + l.i, Line: l.line, Col: l.col}
}

// runeAt returns the rune at byte index j and its width (0 at the end).
func (l *lexer) runeAt(j int) (rune, int) {
	if j >= len(l.src) {
		return 0, 0
	}
	return utf8.DecodeRuneInString(l.src[j:])
}

// advance moves past one rune, keeping line and column up to date. Columns
// count runes, so a Chinese character is one column.
func (l *lexer) advance() {
	r, w := l.runeAt(l.i)
	if w == 0 {
		return
	}
	l.i += w
	if r == '\n' {
		l.line++
		l.col = 1
	} else {
		l.col++
	}
}

func (l *lexer) errAt(p sqlast.Pos, near, msg string) *SyntaxError {
	return &SyntaxError{Pos: p, Near: shorten(near), Msg: msg}
}

// lex returns every token of src followed by an EOF token. base is the
// position of src's first byte in the enclosing text. The EOF token sits just
// after the last token (or at the end of src when there is none), so that
// "at end of input" errors point at the end of the statement rather than at
// trailing comments. Only unterminated strings, identifiers and comments are
// errors here; other stray characters become tIllegal tokens.
func lex(src string, base sqlast.Pos) ([]token, *SyntaxError) {
	l := &lexer{src: src, base: base, line: base.Line, col: base.Col}
	toks := make([]token, 0, len(src)/3+1)
	eofPos := sqlast.Pos{}
	for {
		if err := l.skipSpace(); err != nil {
			return nil, err
		}
		if l.i >= len(l.src) {
			break
		}
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		eofPos = l.pos()
	}
	if len(toks) == 0 {
		eofPos = l.pos()
	}
	toks = append(toks, token{kind: tEOF, pos: eofPos, end: eofPos.Offset})
	return toks, nil
}

// skipSpace skips whitespace, -- line comments and /* */ block comments.
func (l *lexer) skipSpace() *SyntaxError {
	for l.i < len(l.src) {
		r, _ := l.runeAt(l.i)
		switch {
		case unicode.IsSpace(r) || r == '\uFEFF':
			l.advance()
		case strings.HasPrefix(l.src[l.i:], "--"):
			for l.i < len(l.src) && l.src[l.i] != '\n' {
				l.advance()
			}
		case strings.HasPrefix(l.src[l.i:], "/*"):
			start := l.pos()
			l.advance()
			l.advance()
			for {
				if l.i >= len(l.src) {
					return l.errAt(start, "/*", "unterminated comment")
				}
				if strings.HasPrefix(l.src[l.i:], "*/") {
					l.advance()
					l.advance()
					break
				}
				l.advance()
			}
		default:
			return nil
		}
	}
	return nil
}

// twoCharOps are the operators of two characters, tried before single ones.
var twoCharOps = []string{"::", "<=", ">=", "<>", "!=", "||"}

const singleCharOps = "(),;.*+-/%=<>[]:"

func isIdentStart(r rune) bool {
	return r == '_' || unicode.IsLetter(r)
}

func isIdentPart(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc)
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// next lexes one token starting at a non-space character.
func (l *lexer) next() (token, *SyntaxError) {
	start := l.pos()
	startI := l.i
	r, _ := l.runeAt(l.i)
	mk := func(kind tokKind, val string) token {
		text := l.src[startI:l.i]
		return token{kind: kind, text: text, val: val, pos: start, end: l.base.Offset + l.i}
	}
	switch {
	case isIdentStart(r):
		for l.i < len(l.src) {
			r, _ := l.runeAt(l.i)
			if !isIdentPart(r) {
				break
			}
			l.advance()
		}
		t := mk(tWord, "")
		t.val = strings.ToLower(t.text)
		t.upper = strings.ToUpper(t.text)
		return t, nil
	case r < utf8.RuneSelf && isDigit(byte(r)) || (r == '.' && l.i+1 < len(l.src) && isDigit(l.src[l.i+1])):
		l.lexNumber()
		t := mk(tNumber, "")
		t.val = t.text
		return t, nil
	case r == '\'':
		val, ok := l.lexQuoted('\'', true)
		if !ok {
			return token{}, l.errAt(start, l.src[startI:], "unterminated string literal")
		}
		return mk(tString, val), nil
	case r == '`' || r == '"':
		val, ok := l.lexQuoted(byte(r), false)
		if !ok {
			return token{}, l.errAt(start, l.src[startI:], "unterminated quoted identifier")
		}
		return mk(tQIdent, val), nil
	}
	for _, op := range twoCharOps {
		if strings.HasPrefix(l.src[l.i:], op) {
			l.advance()
			l.advance()
			return mk(tOp, op), nil
		}
	}
	if r < utf8.RuneSelf && strings.IndexByte(singleCharOps, byte(r)) >= 0 {
		l.advance()
		return mk(tOp, string(r)), nil
	}
	l.advance()
	t := mk(tIllegal, "")
	t.val = t.text
	return t, nil
}

// lexNumber consumes digits [. digits] [e [+-] digits].
func (l *lexer) lexNumber() {
	for l.i < len(l.src) && isDigit(l.src[l.i]) {
		l.advance()
	}
	if l.i < len(l.src) && l.src[l.i] == '.' {
		l.advance()
		for l.i < len(l.src) && isDigit(l.src[l.i]) {
			l.advance()
		}
	}
	if l.i < len(l.src) && (l.src[l.i] == 'e' || l.src[l.i] == 'E') {
		j := l.i + 1
		if j < len(l.src) && (l.src[j] == '+' || l.src[j] == '-') {
			j++
		}
		if j < len(l.src) && isDigit(l.src[j]) {
			for l.i < j {
				l.advance()
			}
			for l.i < len(l.src) && isDigit(l.src[l.i]) {
				l.advance()
			}
		}
	}
}

// lexQuoted consumes a quoted literal whose opening quote q is at l.i and
// returns its content. A doubled quote stands for the quote itself; when
// backslash is set, backslash escapes are decoded too (\n \t \r \0 \b \Z \\
// \' \"; \% and \_ keep their backslash for LIKE; any other \c is c).
func (l *lexer) lexQuoted(q byte, backslash bool) (string, bool) {
	l.advance()
	var b strings.Builder
	for {
		if l.i >= len(l.src) {
			return "", false
		}
		c := l.src[l.i]
		switch {
		case c == q:
			if l.i+1 < len(l.src) && l.src[l.i+1] == q {
				b.WriteByte(q)
				l.advance()
				l.advance()
				continue
			}
			l.advance()
			return b.String(), true
		case c == '\\' && backslash:
			l.advance()
			if l.i >= len(l.src) {
				return "", false
			}
			e := l.src[l.i]
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'b':
				b.WriteByte('\b')
			case 'Z':
				b.WriteByte(0x1a)
			case '%', '_':
				b.WriteByte('\\')
				b.WriteByte(e)
			default:
				_, w := l.runeAt(l.i)
				b.WriteString(l.src[l.i : l.i+w])
				l.advance()
				continue
			}
			l.advance()
		default:
			_, w := l.runeAt(l.i)
			b.WriteString(l.src[l.i : l.i+w])
			l.advance()
		}
	}
}

// shorten trims a token text for use in an error message.
func shorten(s string) string {
	// A string literal may be a secret (ACCESS_KEY = '…'): errors show its
	// position, never its content.
	if strings.HasPrefix(s, "'") {
		return "'…'"
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if utf8.RuneCountInString(s) > 40 {
		n := 0
		for i := range s {
			if n == 37 {
				return s[:i] + "..."
			}
			n++
		}
	}
	return s
}

// Chunk is one statement of a script, as cut by Split.
type Chunk struct {
	// Text is the statement's source from its first token to its last,
	// without the terminating semicolon and without comments before or
	// after it (comments inside are kept).
	Text string
	// Start is the position of Text's first byte in the whole script.
	Start sqlast.Pos
}

// Split cuts a script into statements at the semicolons that are tokens:
// semicolons inside '…' strings (with doubled-quote and backslash escapes),
// "…" and `…` identifiers, -- comments and /* */ comments do not split. Statements
// that hold nothing but comments and whitespace are dropped. Split does not
// check the statements' syntax; its only errors are unterminated strings,
// identifiers and comments, reported as *SyntaxError with their position.
func Split(src string) ([]Chunk, error) {
	toks, err := lex(src, sqlast.Pos{Offset: 0, Line: 1, Col: 1})
	if err != nil {
		return nil, err
	}
	var chunks []Chunk
	first := -1
	for i, t := range toks {
		if t.kind == tEOF || (t.kind == tOp && t.val == ";") {
			if first >= 0 {
				last := toks[i-1]
				chunks = append(chunks, Chunk{
					Text:  src[toks[first].pos.Offset:last.end],
					Start: toks[first].pos,
				})
			}
			first = -1
			continue
		}
		if first < 0 {
			first = i
		}
	}
	return chunks, nil
}
