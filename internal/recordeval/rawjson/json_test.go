package rawjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

var jsonSamples = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `true`, `false`, `null`, ` {"a" : [ 1 , 2 ] } `,
	`{"a":1,"a":2}`, `{"a\u0062":"x","ab":"y"}`, `{"k":"\ud83d\ude00 \ud800 \udc00x \u00e9"}`,
	`"\"\\\/\b\f\n\r\t"`, "\"\xff\xfe\"", `{"a":{"b":{"c":[1,{"d":"e"}]}}}`, `[1,"2",[3],{"4":5}]`,
	`{"a":"}","b":"]","c":"\\","d":"\"}"}`, `123456789012345678901234567890`,
	// invalid
	``, ` `, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`,
	`"abc`, `"\x"`, `"\u12"`, "\"a\x01\"", `{} {}`, `{'a':1}`, `[1 2]`, `NaN`, `{"a":1 "b":2}`,
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonSamples {
		checkJSON(t, []byte(s))
	}
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	if _, err := Valid([]byte(deep)); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("deep nesting: %v", err)
	}
}

// checkJSON compares Valid, Compact, the text of JSON strings and
// objectGet with encoding/json.
func checkJSON(t *testing.T, b []byte) {
	t.Helper()
	raw, err := Valid(b)
	if (err == nil) != json.Valid(b) {
		t.Fatalf("%q: Valid err=%v, json.Valid=%v", b, err, json.Valid(b))
	}
	// ValidMembers judges the same, and its members are EachMember's.
	type member struct {
		k, v          string
		plain, vplain bool
	}
	var got, wantMembers []member
	raw2, err2 := ValidMembers(b, func(k []byte, plain bool, v []byte, vplain bool) {
		got = append(got, member{string(k), string(v), plain, vplain})
	})
	if (err2 == nil) != (err == nil) || (err != nil && err.Error() != err2.Error()) || !bytes.Equal(raw, raw2) {
		t.Fatalf("%q: ValidMembers = %q, %v; Valid = %q, %v", b, raw2, err2, raw, err)
	}
	if err != nil {
		return
	}
	EachMember(raw, func(k []byte, plain bool, v []byte, vplain bool) {
		wantMembers = append(wantMembers, member{string(k), string(v), plain, vplain})
	})
	if fmt.Sprint(got) != fmt.Sprint(wantMembers) {
		t.Fatalf("%q: ValidMembers gave members %+v, EachMember %+v", b, got, wantMembers)
	}
	// Plain means the text between the quotes is the string's text, and
	// every such ASCII text without a backslash is plain.
	isPlain := func(quoted string) bool {
		c := quoted[1 : len(quoted)-1]
		return !strings.ContainsAny(c, "\\") && !strings.ContainsFunc(c, func(r rune) bool { return r >= utf8.RuneSelf })
	}
	for _, m := range got {
		if m.plain != isPlain(`"`+m.k+`"`) {
			t.Fatalf("%q: key %q plain=%v", b, m.k, m.plain)
		}
		if str := m.v[0] == '"'; m.vplain != (str && isPlain(m.v)) {
			t.Fatalf("%q: value %q vplain=%v", b, m.v, m.vplain)
		}
		if m.vplain {
			var text string
			if err := json.Unmarshal([]byte(m.v), &text); err != nil || text != m.v[1:len(m.v)-1] {
				t.Fatalf("%q: plain value %q reads as %q (%v)", b, m.v, text, err)
			}
		}
	}
	if !bytes.Equal(raw, bytes.TrimSpace(b)) {
		t.Fatalf("%q: raw = %q", b, raw)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, b); err != nil {
		t.Fatal(err)
	}
	var scratch []byte
	if got := Compact(raw, &scratch); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%q: compact = %q, want %q", b, got, want.Bytes())
	}
	if end := skipValue(raw, 0); end != len(raw) {
		t.Fatalf("%q: skipValue = %d, want %d", b, end, len(raw))
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	switch v := v.(type) {
	case string:
		got := string(AppendUnquoted(nil, raw))
		if c, ok := StringContent(raw); ok && string(c) != got {
			t.Fatalf("%q: stringContent = %q, unquoted %q", b, c, got)
		}
		if got != v {
			t.Fatalf("%q: unquoted = %q, want %q", b, got, v)
		}
	case map[string]any:
		for k, want := range v {
			got := ObjectGet(raw, []byte(k), &scratch)
			var g any
			d := json.NewDecoder(bytes.NewReader(got))
			d.UseNumber()
			if err := d.Decode(&g); err != nil {
				t.Fatalf("%q: objectGet(%q) = %q: %v", b, k, got, err)
			}
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(want)
			if !bytes.Equal(gj, wj) {
				t.Fatalf("%q: objectGet(%q) = %s, want %s", b, k, gj, wj)
			}
		}
		if got := ObjectGet(raw, []byte("\x00no such key"), &scratch); got != nil {
			t.Fatalf("%q: missing key gave %q", b, got)
		}
	case []any:
		for i, want := range v {
			got := ArrayGet(raw, int64(i))
			wj, _ := json.Marshal(want)
			var gc bytes.Buffer
			if err := json.Compact(&gc, got); err != nil {
				t.Fatalf("%q: arrayGet(%d) = %q: %v", b, i, got, err)
			}
			var g any
			d := json.NewDecoder(&gc)
			d.UseNumber()
			_ = d.Decode(&g)
			gj, _ := json.Marshal(g)
			if !bytes.Equal(gj, wj) {
				t.Fatalf("%q: arrayGet(%d) = %s, want %s", b, i, gj, wj)
			}
		}
		if got := ArrayGet(raw, int64(len(v))); got != nil {
			t.Fatalf("%q: element past the end: %q", b, got)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s", "\x00\x1f\n\t\r\b\f", "é\U0001F600", "\xff\xfe", "\u2028\u2029", "<&>"} {
		got := AppendQuoted(nil, []byte(s))
		want, _ := json.Marshal(s)
		want = bytes.ReplaceAll(bytes.ReplaceAll(bytes.ReplaceAll(want, []byte(`\u003c`), []byte("<")), []byte(`\u003e`), []byte(">")), []byte(`\u0026`), []byte("&"))
		if !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
		if !json.Valid(got) {
			t.Errorf("%q: invalid JSON %s", s, got)
		}
	}
}

func TestParsePath(t *testing.T) {
	raw := []byte(`{"a":{"b":[10,{"c d":"x"}]},"$":1}`)
	var tmp []byte
	for path, want := range map[string]string{
		"$":               string(raw),
		"$.a.b[0]":        "10",
		"$.a.b[1]['c d']": `"x"`,
		`$.a.b[1]["c d"]`: `"x"`,
		"$.a.b[2]":        "",
		"$.z":             "",
		"$['$']":          "1",
	} {
		steps, err := ParsePath(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if got := string(WalkPath(raw, steps, &tmp)); got != want {
			t.Errorf("%s: got %q, want %q", path, got, want)
		}
	}
	for _, bad := range []string{"", "a", "$.", "$..a", "$[", "$[x]", "$['a'", "$.a[*]", "$.*", "$a"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzJSON checks the lazy JSON scanner against encoding/json.
func FuzzJSON(f *testing.F) {
	for _, s := range jsonSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkJSON(t, b)
	})
}
