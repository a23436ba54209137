//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/formats"
	"github.com/lakepipe/lakepipe/internal/rowio"
)

// poisonFormat is one pipe of the poison fleet: how its files are named,
// written and compressed.
type poisonFormat struct {
	name   string // table, volume and pipe suffix
	using  string // CSV, JSON, PARQUET
	ext    string // file extension, with the compression's
	wrap   string // "", gzip, zstd
	good   [][]byte
	bad    map[string][]byte // file name → content
	goodIn map[string]int64  // good file name → rows
}

// TestPoisonFleet is issue 17's fleet: two `lakepipe worker` processes
// serve one LIST pipe per format (CSV, JSON, Parquet, and CSV/JSON in gzip
// and zstd), whose volumes hold good files beside at least 20 corrupt ones
// per format, made by mutating good ones: truncations, flipped bytes in
// headers and footers, bad cells, nesting bombs, and files of a few KB
// that decompress to 1 GB. Throughout, both workers keep their PIDs and
// stay under 500 MB of RSS (sampled from /proc); in the end every good
// file is LOADED once (every row once), every bad one FAILED with a
// reason.
func TestPoisonFleet(t *testing.T) {
	s := newStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	s.Ctx = ctx
	bin := lakepipeBin(t)
	rng := rand.New(rand.NewSource(testSeed(t, "LAKEPIPE_POISON_SEED")))

	queue := "it-poison-" + s.ID
	orch := s.useQueue(queue)
	workers := []*workerProc{
		{t: t, bin: bin, queue: queue, logPath: t.TempDir() + "/worker1.log"},
		{t: t, bin: bin, queue: queue, logPath: t.TempDir() + "/worker2.log"},
	}
	endWorkerProcs(t, s, orch, workers...)
	for _, w := range workers {
		w.start()
	}
	pids := []int{workers[0].cmd.Process.Pid, workers[1].cmd.Process.Pid}

	// RSS of both workers, every 100 ms, for the whole test.
	var (
		rssMu  sync.Mutex
		maxRSS = map[int]int64{}
	)
	stopRSS := make(chan struct{})
	rssDone := make(chan struct{})
	go func() {
		defer close(rssDone)
		for {
			for _, pid := range pids {
				if kb := rssKB(pid); kb > 0 {
					rssMu.Lock()
					maxRSS[pid] = max(maxRSS[pid], kb)
					rssMu.Unlock()
				}
			}
			select {
			case <-stopRSS:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	fmts := poisonFormats(t, rng)
	for _, f := range fmts {
		s.run(fmt.Sprintf(`CREATE TABLE poison_%s (id BIGINT, name STRING, amount DOUBLE)`, f.name))
		vol := s.volume("poison_vol_"+f.name, "poison/"+f.name, false)
		s.run(fmt.Sprintf(`CREATE PIPE poison_pipe_%s INGEST_MODE = 'LIST' POLL_INTERVAL_IN_SECONDS = '2'
			AS COPY INTO poison_%s FROM VOLUME %s USING %s`, f.name, f.name, vol, f.using))
	}
	// Bad files first, so that they meet the workers before the good ones.
	for _, f := range fmts {
		for name, b := range f.bad {
			s.put("poison/"+f.name+"/"+name, b)
		}
	}
	for _, f := range fmts {
		for i, b := range f.good {
			s.put(fmt.Sprintf("poison/%s/good_%02d%s", f.name, i, f.ext), b)
		}
	}

	// Wait until every file of every pipe has its record.
	type rec struct{ status, msg string }
	records := func(f *poisonFormat) map[string]rec {
		res, err := s.Store.Query(ctx, "SELECT file_path, argMax(status, version), argMax(first_error_message, version) FROM lakepipe.load_history WHERE table_name = "+
			chsql.QuoteString(s.Schema+".poison_"+f.name)+" GROUP BY file_path")
		if err != nil {
			t.Fatalf("read load_history: %v", err)
		}
		out := map[string]rec{}
		for _, r := range res.Rows {
			out[r[0].(string)] = rec{r[1].(string), r[2].(string)}
		}
		return out
	}
	deadline := time.Now().Add(8 * time.Minute)
	for {
		waiting := 0
		for _, f := range fmts {
			waiting += len(f.good) + len(f.bad) - len(records(f))
		}
		if waiting == 0 {
			break
		}
		for i, w := range workers {
			select {
			case <-w.exited:
				t.Fatalf("worker %d (pid %d) died:\n%s", i+1, pids[i], w.tail(60))
			default:
			}
		}
		if time.Now().After(deadline) {
			for _, f := range fmts {
				got := records(f)
				for name := range f.bad {
					if _, ok := got[name]; !ok {
						t.Errorf("%s: bad file %s has no record", f.name, name)
					}
				}
				for name := range f.goodIn {
					if _, ok := got[name]; !ok {
						t.Errorf("%s: good file %s has no record", f.name, name)
					}
				}
			}
			t.Fatalf("%d files without a load record after 8 minutes", waiting)
		}
		time.Sleep(time.Second)
	}
	close(stopRSS)
	<-rssDone

	for _, f := range fmts {
		got := records(f)
		var want int64
		for name, n := range f.goodIn {
			want += n
			if r := got[name]; r.status != "LOADED" {
				t.Errorf("%s: good file %s is %s (%s), want LOADED", f.name, name, r.status, r.msg)
			}
		}
		for name := range f.bad {
			r := got[name]
			if r.status != "FAILED" || strings.TrimSpace(r.msg) == "" {
				t.Errorf("%s: bad file %s is %s with reason %q, want FAILED with a reason", f.name, name, r.status, r.msg)
			}
			if strings.HasPrefix(name, "bomb") || strings.HasPrefix(name, "huge") {
				t.Logf("%s: %s", name, r.msg)
			}
			if len(r.msg) > 4000 {
				t.Errorf("%s: bad file %s: reason of %d bytes", f.name, name, len(r.msg))
			}
		}
		row, err := s.Store.Query(ctx, "SELECT count(), uniqExact(id) FROM "+chsql.Table(s.Schema, "poison_"+f.name))
		if err != nil {
			t.Fatal(err)
		}
		n, distinct := toInt64(row.Rows[0][0]), toInt64(row.Rows[0][1])
		if n != want || distinct != want {
			t.Errorf("%s: %d rows (%d distinct ids), want %d once each", f.name, n, distinct, want)
		}
		t.Logf("%s: %d good files (%d rows) LOADED, %d bad files FAILED", f.name, len(f.good), want, len(f.bad))
	}
	for i, w := range workers {
		select {
		case <-w.exited:
			t.Errorf("worker %d (pid %d) exited", i+1, pids[i])
		default:
		}
		if w.starts != 1 || w.cmd.Process.Pid != pids[i] {
			t.Errorf("worker %d was restarted", i+1)
		}
	}
	for _, pid := range pids {
		rssMu.Lock()
		kb := maxRSS[pid]
		rssMu.Unlock()
		t.Logf("worker pid %d: max RSS %d MB", pid, kb>>10)
		if kb == 0 || kb > 500<<10 {
			t.Errorf("worker pid %d: max RSS %d MB, want under 500 MB", pid, kb>>10)
		}
	}
}

// rssKB reads a process's resident set size from /proc (0 if gone).
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// poisonFormats makes the fleet's files: per format 6 good files of 50
// rows (ids unique across the format) and at least 20 bad ones.
func poisonFormats(t *testing.T, rng *rand.Rand) []*poisonFormat {
	t.Helper()
	const goodFiles, rowsPer = 6, 50
	type row struct {
		id     int64
		name   string
		amount float64
	}
	rowsOf := func(file int) []row {
		out := make([]row, rowsPer)
		for i := range out {
			id := int64(file*rowsPer + i + 1)
			out[i] = row{id, fmt.Sprintf("name-%d", id), float64(id) / 4}
		}
		return out
	}
	csvOf := func(rows []row) []byte {
		var b bytes.Buffer
		for _, r := range rows {
			fmt.Fprintf(&b, "%d,%s,%g\n", r.id, r.name, r.amount)
		}
		return b.Bytes()
	}
	jsonOf := func(rows []row) []byte {
		var b bytes.Buffer
		for _, r := range rows {
			fmt.Fprintf(&b, `{"id":%d,"name":%q,"amount":%g}`+"\n", r.id, r.name, r.amount)
		}
		return b.Bytes()
	}
	parquetOf := func(rows []row) []byte {
		var b bytes.Buffer
		w, err := formats.NewParquetWriter(&b, []rowio.Column{{Name: "id", Type: "Int64"}, {Name: "name", Type: "String"}, {Name: "amount", Type: "Float64"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if err := w.Write([]any{r.id, r.name, r.amount}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}

	// Text files that are wrong whatever the reader: cells of the wrong
	// type, an unterminated quote, a nesting bomb, garbage.
	badCSV := func(i int, good []byte) []byte {
		lines := strings.SplitAfter(string(good), "\n")
		k := rng.Intn(len(lines) - 1)
		garbage := []string{"abc", "1e999x", "9223372036854775808", "--1", "0x1G", "数据", "\x00\x01", strings.Repeat("9", 300_000)}
		switch i % 4 {
		case 0, 1:
			lines[k] = garbage[i%len(garbage)] + "," + strings.SplitN(lines[k], ",", 2)[1]
		case 2:
			lines[k] = strings.Replace(lines[k], ",", `,"unterminated `, 1)
			lines = lines[:k+1]
		case 3:
			f := strings.Split(strings.TrimSuffix(lines[k], "\n"), ",")
			lines[k] = f[0] + "," + f[1] + ",not-a-number\n"
		}
		return []byte(strings.Join(lines, ""))
	}
	badJSON := func(i int, good []byte) []byte {
		lines := strings.SplitAfter(string(good), "\n")
		k := rng.Intn(len(lines) - 1)
		switch i % 5 {
		case 0:
			lines[k] = lines[k][:len(lines[k])/2] + "\n" // cut mid-object
		case 1:
			lines[k] = `{"id":"abc","name":"x","amount":1}` + "\n"
		case 2:
			lines[k] = `{"id":1,"name":` + strings.Repeat("[", 100_000) + "\n"
		case 3:
			lines[k] = `{"id":` + strings.Repeat("9", 400) + `,"name":"x"}` + "\n"
		case 4:
			lines[k] = "\xff\xfe garbage \x00\n"
		}
		return []byte(strings.Join(lines, ""))
	}
	gz := func(b []byte) []byte {
		var out bytes.Buffer
		w := gzip.NewWriter(&out)
		_, _ = w.Write(b)
		_ = w.Close()
		return out.Bytes()
	}
	zst := func(b []byte) []byte {
		var out bytes.Buffer
		w, _ := zstd.NewWriter(&out)
		_, _ = w.Write(b)
		_ = w.Close()
		return out.Bytes()
	}
	// Compressed files broken in the stream itself: truncations, flipped
	// header bytes, a flipped byte in the body (the checksum fails).
	badStream := func(i int, c []byte) []byte {
		b := bytes.Clone(c)
		switch i % 4 {
		case 0:
			return b[:len(b)*(i%7+1)/9]
		case 1:
			b[i%4] ^= 0xff
		case 2:
			b[len(b)/2+i%5] ^= 0x5a
		case 3:
			return b[:len(b)-1-i%4]
		}
		return b
	}

	var out []*poisonFormat
	add := func(name, using, ext, wrap string, enc func([]row) []byte, bad func(i int, good []byte) []byte) *poisonFormat {
		f := &poisonFormat{name: name, using: using, ext: ext, wrap: wrap, bad: map[string][]byte{}, goodIn: map[string]int64{}}
		comp := func(b []byte) []byte { return b }
		switch wrap {
		case "gzip":
			comp = gz
		case "zstd":
			comp = zst
		}
		for i := range goodFiles {
			b := comp(enc(rowsOf(i)))
			f.good = append(f.good, b)
			f.goodIn[fmt.Sprintf("good_%02d%s", i, ext)] = rowsPer
		}
		for i := range 20 {
			if bad == nil {
				break
			}
			src := enc(rowsOf(1000 + i))
			var b []byte
			if wrap != "" && i%2 == 1 {
				b = badStream(i/2, comp(src))
			} else {
				b = comp(bad(i, src))
			}
			f.bad[fmt.Sprintf("bad_%02d%s", i, ext)] = b
		}
		out = append(out, f)
		return f
	}
	add("csv", "CSV", ".csv", "", csvOf, badCSV)
	add("json", "JSON", ".json", "", jsonOf, badJSON)
	csvgz := add("csvgz", "CSV", ".csv.gz", "gzip", csvOf, badCSV)
	add("jsongz", "JSON", ".json.gz", "gzip", jsonOf, badJSON)
	csvzst := add("csvzst", "CSV", ".csv.zst", "zstd", csvOf, badCSV)
	jsonzst := add("jsonzst", "JSON", ".json.zst", "zstd", jsonOf, badJSON)

	// Bombs: 1 GiB of rows that would load (all with id 1, so a bomb that
	// got through shows in the counts) as 112 KB of zstd, and 1 GiB of
	// zeros as 1 MB of gzip and 112 KB of zstd. Each is 64 concatenated
	// members of 16 MiB (valid gzip and zstd), so that making them takes a
	// fraction of a second. (gzip cannot pass ~1030:1, so 1 GiB of rows in
	// gzip is a large file, not a bomb.)
	type bomb struct{ name, pattern, wrap string }
	for _, b := range []bomb{{"bomb_rows", "1,bomb,1\n", "zstd"}, {"bomb_zeros", "\x00\x00\x00\x00\x00\x00\x00\x00", "zstd"}, {"bomb_zeros", "\x00\x00\x00\x00\x00\x00\x00\x00", "gzip"}} {
		var buf bytes.Buffer
		var w io.WriteCloser
		if b.wrap == "gzip" {
			w, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
		} else {
			w, _ = zstd.NewWriter(&buf, zstd.WithWindowSize(8<<20))
		}
		_, _ = io.Copy(w, io.LimitReader(&repeatReader{s: b.pattern}, 16<<20))
		_ = w.Close()
		data := bytes.Repeat(buf.Bytes(), 64)
		if b.wrap == "gzip" {
			csvgz.bad[b.name+".csv.gz"] = data
		} else {
			csvzst.bad[b.name+".csv.zst"] = data
		}
		t.Logf("%s: 1 GiB as %d KB of %s", b.name, len(data)>>10, b.wrap)
	}

	// The issue's own: a 32 KiB zstd file of RLE blocks standing for 1 GiB
	// of newlines (32768:1), and a 9-byte zstd frame that declares a 2 GiB
	// window (the decoder's default would allocate 512 MiB for it).
	rle := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3} // no checksum, 128 KiB window
	for i := range 8192 {
		h := uint32(1<<1 | (128<<10)<<3) // an RLE block of 128 KiB
		if i == 8191 {
			h |= 1 // the last block
		}
		rle = append(rle, byte(h), byte(h>>8), byte(h>>16), '\n')
	}
	window := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (31 - 10) << 3, 0x01, 0x00, 0x00}
	for _, f := range []*poisonFormat{csvzst, jsonzst} {
		f.bad["bomb_rle"+f.ext] = rle
		f.bad["huge_window"+f.ext] = window
	}

	// Parquet: mutations of a good file that the reader must refuse
	// (truncations; flipped bytes in the magic, the footer length and the
	// footer). A mutation that still reads as a valid file is not a bad
	// file, so candidates are checked here first and only refused ones
	// kept.
	pq := add("parquet", "PARQUET", ".parquet", "", parquetOf, nil)
	pq.bad = map[string][]byte{}
	src := parquetOf(rowsOf(2000))
	n := 0
	for try := 0; n < 24 && try < 5000; try++ {
		b := bytes.Clone(src)
		switch try % 5 {
		case 0:
			b = b[:rng.Intn(len(b)-1)+1]
		case 1:
			b[rng.Intn(4)] ^= byte(1 + rng.Intn(255))
		case 2:
			b[len(b)-8+rng.Intn(4)] ^= byte(1 + rng.Intn(255)) // footer length
		case 3, 4:
			footer := int(uint32(src[len(src)-8]) | uint32(src[len(src)-7])<<8 | uint32(src[len(src)-6])<<16 | uint32(src[len(src)-5])<<24)
			for range 1 + rng.Intn(3) {
				b[len(b)-8-footer+rng.Intn(footer)] ^= byte(1 + rng.Intn(255))
			}
		}
		if readsCleanly(b) {
			continue
		}
		pq.bad[fmt.Sprintf("bad_%02d.parquet", n)] = b
		n++
	}
	if n < 20 {
		t.Fatalf("only %d refused Parquet mutations", n)
	}
	// The case: the embedded Arrow schema (base64 in the footer's
	// ARROW:schema) with a length or offset word set huge, which made
	// arrow-go try to allocate ~189 GB.
	enc, dec := arrowSchemaIn(t, src)
	for try, m := 0, 0; m < 8 && try < 2000; try++ {
		d := bytes.Clone(dec)
		at := 8 + 4*rng.Intn((len(d)-8)/4)
		binary.LittleEndian.PutUint32(d[at:], []uint32{0xffffffff, 0x7fffffff, 0x10000000, uint32(rng.Int31())}[rng.Intn(4)])
		b := bytes.Replace(src, []byte(enc), []byte(base64.StdEncoding.EncodeToString(d)), 1)
		if readsCleanly(b) {
			continue
		}
		pq.bad[fmt.Sprintf("bad_schema_%02d.parquet", m)] = b
		m++
	}
	return out
}

// arrowSchemaIn finds the base64 ARROW:schema value in a Parquet file's
// footer: the run of base64 characters after the key.
func arrowSchemaIn(t *testing.T, file []byte) (string, []byte) {
	t.Helper()
	i := bytes.Index(file, []byte("ARROW:schema"))
	if i < 0 {
		t.Fatal("no ARROW:schema in the Parquet file")
	}
	isB64 := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
	}
	j := i + len("ARROW:schema")
	for j < len(file) && !(isB64(file[j]) && j+40 < len(file) && isB64(file[j+1]) && isB64(file[j+2]) && isB64(file[j+3])) {
		j++
	}
	k := j
	for k < len(file) && isB64(file[k]) {
		k++
	}
	enc := string(file[j:k])
	for len(enc)%4 != 0 {
		enc = enc[1:] // a length byte that happened to be a base64 character
	}
	dec, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		t.Fatalf("ARROW:schema is not base64: %v", err)
	}
	return enc, dec
}

// readsCleanly reports whether a Parquet file reads to the end without an
// error (a panic counts as an error).
func readsCleanly(b []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	r, err := formats.Open(rowio.Source{R: bytes.NewReader(b), At: bytes.NewReader(b), Size: int64(len(b)), Name: "x.parquet"}, "PARQUET", rowio.Options{})
	if err != nil {
		return false
	}
	defer r.Close()
	for {
		b, err := r.Next()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		// Rows the table cannot hold (a column now of another type) fail too.
		if len(r.Columns()) != 3 || b.Rows == 0 {
			return false
		}
		for _, c := range r.Columns() {
			if c.Type != "Int64" && c.Type != "String" && c.Type != "Float64" && c.Type != "Nullable(Int64)" && c.Type != "Nullable(String)" && c.Type != "Nullable(Float64)" {
				return false
			}
		}
	}
}

// repeatReader yields s over and over, carrying on where the last Read
// stopped.
type repeatReader struct {
	s   string
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.s[r.off:])
		n += c
		r.off = (r.off + c) % len(r.s)
	}
	return n, nil
}
