//go:build integration

package integration

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/minio/minio-go/v7"
)

// TestDirectoryRefresh checks that DIRECTORY(VOLUME v) of a volume with
// AUTO_REFRESH = FALSE shows the last snapshot until ALTER VOLUME … REFRESH,
// and that with AUTO_REFRESH = TRUE it always shows the files as they are.
func TestDirectoryRefresh(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(fmt.Sprintf("auto_refresh=%v", auto), func(t *testing.T) {
			s := newStack(t)
			s.put("dir/a.csv", []byte("1,a\n"))
			vol := s.volume("dir_vol", "dir", auto)
			list := func() string {
				return rowsText(s.run(`SELECT relative_path, size FROM DIRECTORY(VOLUME ` + vol + `) ORDER BY relative_path`))
			}
			if got := list(); got != "a.csv|4" {
				t.Fatalf("DIRECTORY right after CREATE lists %q, want a.csv|4", got)
			}

			// A new file, a changed file and a deleted file.
			s.put("dir/sub/b.csv", []byte("2,b\n3,c\n"))
			s.put("dir/a.csv", []byte("1,a,x\n"))
			live := "a.csv|6\nsub/b.csv|8"
			if got := list(); auto && got != live {
				t.Errorf("AUTO_REFRESH = TRUE: DIRECTORY lists\n%s\nwant the live files\n%s", indent(got), indent(live))
			} else if !auto && got != "a.csv|4" {
				t.Errorf("AUTO_REFRESH = FALSE: DIRECTORY lists\n%s\nbefore ALTER VOLUME REFRESH; want the old snapshot a.csv|4", indent(got))
			}
			res := s.run(`ALTER VOLUME ` + vol + ` REFRESH`)
			if !strings.Contains(res.Message, "2 files") {
				t.Errorf("ALTER VOLUME REFRESH said %q, want 2 files", res.Message)
			}
			if got := list(); got != live {
				t.Errorf("after ALTER VOLUME REFRESH DIRECTORY lists\n%s\nwant\n%s", indent(got), indent(live))
			}

			if err := rawS3(t).RemoveObject(s.Ctx, s3Bucket, s.key("dir/a.csv"), minio.RemoveObjectOptions{}); err != nil {
				t.Fatal(err)
			}
			want := "sub/b.csv|8"
			if !auto {
				want = live
			}
			if got := list(); got != want {
				t.Errorf("after a file was deleted DIRECTORY lists\n%s\nwant\n%s", indent(got), indent(want))
			}
			// The directory is queryable like a table: WHERE, aggregates.
			if got := scalar(t, s.run(`SELECT SUM(size) FROM DIRECTORY(VOLUME `+vol+`) WHERE relative_path LIKE 'sub/%'`)); got != "8" {
				t.Errorf("SUM(size) of sub/ = %s, want 8", got)
			}
		})
	}
}

func gzipped(t testing.TB, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func zstded(t testing.TB, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := zstd.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSelectFromVolume reads files in place with the clauses of SELECT …
// FROM VOLUME: OPTIONS, an inline schema, SUBDIRECTORY, JSON, and gzip and
// zstd compressed CSV.
func TestSelectFromVolume(t *testing.T) {
	s := newStack(t)
	const plain = "1,apple,1.50\n2,pear,2.25\n3,plum,0.75\n"
	s.put("sel/plain.csv", []byte(plain))
	s.put("sel/header.csv", []byte("id,name,price\n1,apple,1.50\n2,pear,2.25\n3,plum,0.75\n"))
	s.put("sel/semi.csv", []byte("id;name;price\n1;apple;1.50\n2;pear;2.25\n3;plum;0.75\n"))
	s.put("sel/json/a.json", []byte(`{"id": 1, "name": "apple", "price": 1.5}`+"\n"+`{"id": 2, "name": "pear", "price": 2.25}`+"\n"))
	s.put("sel/json/b.json", []byte(`{"id": 3, "name": "plum", "price": 0.75}`+"\n"))
	s.put("sel/zip/plain.csv.gz", gzipped(t, plain))
	s.put("sel/zip/plain.csv.zst", zstded(t, plain))
	s.put("sel/sub/x.csv", []byte("10,ten\n"))
	s.put("sel/sub/deeper/y.csv", []byte("20,twenty\n"))
	s.put("sel/other/z.csv", []byte("30,thirty\n"))
	vol := s.volume("sel_vol", "sel", false)
	fruit := []string{"1|apple|1.50", "2|pear|2.25", "3|plum|0.75"}

	cases := []struct {
		name    string
		sql     string
		columns []string
		rows    []string
	}{
		{"no header: f0, f1, …", `SELECT * FROM VOLUME sel_vol USING CSV FILES('plain.csv') ORDER BY f0`,
			[]string{"f0", "f1", "f2"}, fruit},
		{"header option names the columns", `SELECT id, name, price FROM VOLUME sel_vol USING CSV OPTIONS('header'='true') FILES('header.csv') ORDER BY id`,
			[]string{"id", "name", "price"}, fruit},
		{"header and separator", `SELECT name FROM VOLUME sel_vol USING CSV OPTIONS('header'='true', 'sep'=';') FILES('semi.csv') WHERE price > '1' ORDER BY name`,
			[]string{"name"}, []string{"apple", "pear"}},
		{"inline schema types the columns", `SELECT id * 10 AS id10, name, price * 2 AS double_price FROM VOLUME sel_vol (id INT, name STRING, price DECIMAL(10,2)) USING CSV FILES('plain.csv') ORDER BY id`,
			[]string{"id10", "name", "double_price"}, []string{"10|apple|3.00", "20|pear|4.50", "30|plum|1.50"}},
		{"inline schema with a header", `SELECT SUM(price) AS total FROM VOLUME sel_vol (id INT, name STRING, price DECIMAL(10,2)) USING CSV OPTIONS('header'='true') FILES('header.csv')`,
			[]string{"total"}, []string{"4.50"}},
		{"subdirectory reads its files recursively", `SELECT f0, f1 FROM VOLUME sel_vol USING CSV SUBDIRECTORY 'sub/' ORDER BY f0`,
			[]string{"f0", "f1"}, []string{"10|ten", "20|twenty"}},
		{"JSON files keep their keys", `SELECT id, name, price FROM VOLUME sel_vol USING JSON SUBDIRECTORY 'json/' ORDER BY id`,
			[]string{"id", "name", "price"}, []string{"1|apple|1.5", "2|pear|2.25", "3|plum|0.75"}},
		{"JSON with a schema", `SELECT COUNT(*) AS n, SUM(id) AS ids FROM VOLUME sel_vol (id BIGINT, name STRING) USING JSON FILES('json/a.json', 'json/b.json')`,
			[]string{"n", "ids"}, []string{"3|6"}},
		{"gzip CSV", `SELECT * FROM VOLUME sel_vol USING CSV FILES('zip/plain.csv.gz') ORDER BY f0`,
			[]string{"f0", "f1", "f2"}, fruit},
		{"zstd CSV", `SELECT * FROM VOLUME sel_vol USING CSV FILES('zip/plain.csv.zst') ORDER BY f0`,
			[]string{"f0", "f1", "f2"}, fruit},
		{"gzip and zstd together", `SELECT COUNT(*) FROM VOLUME sel_vol USING CSV SUBDIRECTORY 'zip/'`,
			nil, []string{"6"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.T = t
			res := s.run(c.sql)
			if c.columns != nil {
				wantColumns(t, c.name, res, c.columns...)
			}
			wantRows(t, c.name, res, c.rows...)
		})
	}
	s.T = t
	_ = vol
}
