//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
)

// TestCopyPurge checks that COPY INTO … PURGE = TRUE deletes exactly the
// files it loaded, and that without PURGE the files stay.
func TestCopyPurge(t *testing.T) {
	for _, purge := range []bool{false, true} {
		t.Run(fmt.Sprintf("purge=%v", purge), func(t *testing.T) {
			s := newStack(t)
			s.put("in/a.csv", []byte("1,a\n2,b\n"))
			s.put("in/b.csv", []byte("3,c\n"))
			s.put("keep/c.csv", []byte("4,d\n"))
			vol := s.volume("in_vol", "", false)
			s.run(`CREATE TABLE t (id INT, name STRING)`)
			sql := `COPY INTO t FROM VOLUME ` + vol + ` USING CSV SUBDIRECTORY 'in/'`
			if purge {
				sql += ` PURGE = TRUE`
			}
			res := s.run(sql)
			wantRows(t, "COPY", res, "in/a.csv|LOADED|2|0|", "in/b.csv|LOADED|1|0|")
			wantRows(t, "table", s.run(`SELECT id, name FROM t ORDER BY id`), "1|a", "2|b", "3|c")
			for _, f := range []string{"in/a.csv", "in/b.csv"} {
				if got := s.exists(f); got == purge {
					t.Errorf("after COPY with PURGE = %v, %s exists = %v", purge, f, got)
				}
			}
			if !s.exists("keep/c.csv") {
				t.Errorf("keep/c.csv, outside the SUBDIRECTORY, was deleted")
			}
			// The history records the loads either way.
			wantRows(t, "load_history", s.run(`SELECT file_path, status, rows_loaded FROM load_history('t') ORDER BY file_path`),
				"in/a.csv|LOADED|2", "in/b.csv|LOADED|1")
		})
	}
}

// TestCopyOnError checks the malformed-row handling of COPY: by default
// the statement fails naming the file and line; with ON_ERROR = 'continue'
// the good rows load and the bad ones are counted.
func TestCopyOnError(t *testing.T) {
	s := newStack(t)
	// Line 3 has too few fields, line 5 a value that is not an INT.
	s.put("bad/rows.csv", []byte("1,a,x\n2,b,y\n3,c\n4,d,z\nfive,e,w\n6,f,v\n"))
	vol := s.volume("bad_vol", "bad", false)
	s.run(`CREATE TABLE t (id INT, name STRING, tag STRING)`)

	err := s.mustFail(`COPY INTO t FROM VOLUME `+vol+` USING CSV FILES('rows.csv')`, "rows.csv", "line 3", "ON_ERROR")
	t.Logf("abort message: %v", err)
	if n := scalar(t, s.run(`SELECT COUNT(*) FROM t`)); n != "0" {
		t.Errorf("a failed COPY left %s rows in the table, want 0", n)
	}
	wantRows(t, "load_history after the failed COPY", s.run(`SELECT file_path, status FROM load_history('t')`), "rows.csv|FAILED")
	lh := s.run(`SELECT first_error_message FROM load_history('t')`)
	if msg := scalar(t, lh); !strings.Contains(msg, "line 3") && !strings.Contains(msg, "field") {
		t.Errorf("load_history first_error_message = %q, want the bad row's error", msg)
	}

	res := s.run(`COPY INTO t FROM VOLUME ` + vol + ` USING CSV FILES('rows.csv') ON_ERROR = 'continue'`)
	if len(res.Rows) != 1 {
		t.Fatalf("COPY ON_ERROR = 'continue' returned %v", table(res))
	}
	row := table(res)[0]
	if row[column(t, res, "status")] != "PARTIALLY_LOADED" || row[column(t, res, "rows_loaded")] != "4" || row[column(t, res, "rows_rejected")] != "2" {
		t.Errorf("COPY ON_ERROR = 'continue' = %v (columns %v), want PARTIALLY_LOADED with 4 loaded and 2 rejected", row, res.Columns)
	}
	if fe := row[column(t, res, "first_error")]; fe == "" {
		t.Errorf("COPY ON_ERROR = 'continue' shows no first_error")
	}
	wantRows(t, "rows loaded past the bad ones", s.run(`SELECT id, name, tag FROM t ORDER BY id`), "1|a|x", "2|b|y", "4|d|z", "6|f|v")
	res = s.run(`SELECT status, rows_loaded, rows_rejected FROM load_history('t')`)
	wantRows(t, "load_history after ON_ERROR = 'continue'", res, "PARTIALLY_LOADED|4|2")
}

// TestCopyIntoTableColumns loads files into tables by position, by header
// name, and into a column subset.
func TestCopyIntoTableColumns(t *testing.T) {
	s := newStack(t)
	s.put("c/pos.csv", []byte("1,apple,1.50\n2,pear,2.25\n"))
	s.put("c/hdr.csv", []byte("price,id,name\n0.75,3,plum\n"))
	s.put("c/two.csv", []byte("4,fig\n"))
	s.put("c/rows.json", []byte(`{"name":"kiwi","id":5,"price":3.10}`+"\n"))
	vol := s.volume("c_vol", "c", false)
	s.run(`CREATE TABLE fruit (id INT, name STRING, price DECIMAL(10,2))`)
	s.run(`COPY INTO fruit FROM VOLUME ` + vol + ` USING CSV FILES('pos.csv')`)
	s.run(`COPY INTO fruit FROM VOLUME ` + vol + ` USING CSV OPTIONS('header'='true') FILES('hdr.csv')`)
	s.run(`COPY INTO fruit (id, name) FROM VOLUME ` + vol + ` USING CSV FILES('two.csv')`)
	s.run(`COPY INTO fruit FROM VOLUME ` + vol + ` USING JSON FILES('rows.json')`)
	wantRows(t, "fruit", s.run(`SELECT id, name, price FROM fruit ORDER BY id`),
		"1|apple|1.50", "2|pear|2.25", "3|plum|0.75", "4|fig|NULL", "5|kiwi|3.10")

	// A file with a different number of columns and no names is refused
	// with the fix in the message.
	s.mustFail(`COPY INTO fruit FROM VOLUME `+vol+` USING CSV FILES('two.csv')`, "two.csv", "2 columns", "3")
}
