//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/chsql"
	"github.com/lakepipe/lakepipe/internal/chstore"
	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
)

// faultEnvInt reads a positive whole number from the environment.
func faultEnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}

// workerProc is a `lakepipe worker` running as a child process, so that the
// test can SIGKILL it like a crashed machine and start it again.
type workerProc struct {
	t       testing.TB
	bin     string
	queue   string
	logPath string
	env     []string // added to the worker's environment
	http    string   // the worker's --http address ("": none)

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	started time.Time
	starts  int
}

// start launches the worker and waits until it polls its task queue.
func (w *workerProc) start() {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	logf, err := os.OpenFile(w.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		w.t.Fatal(err)
	}
	defer logf.Close()
	fi, _ := logf.Stat()
	from := fi.Size()
	w.starts++
	if w.starts == 1 {
		w.t.Cleanup(func() { dropQueueMaintenance(w.queue) })
	}
	fmt.Fprintf(logf, "---- start %d at %s\n", w.starts, time.Now().Format("15:04:05.000"))
	cmd := exec.Command(w.bin, "worker", "--task-queue", w.queue, "--http", w.http, "--log-format", "text")
	cmd.Env = append(os.Environ(),
		"LAKEPIPE_CLICKHOUSE_ADDR="+chAddr, "LAKEPIPE_TEMPORAL_ADDR="+temporalAddr, "LAKEPIPE_WORKSPACE=default")
	cmd.Env = append(cmd.Env, w.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("start lakepipe worker: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	w.cmd, w.exited, w.started = cmd, exited, time.Now()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case <-exited:
			w.t.Fatalf("lakepipe worker exited while starting:\n%s", w.tail(40))
		case <-deadline:
			w.t.Fatalf("lakepipe worker did not report running within 60 s:\n%s", w.tail(40))
		case <-time.After(50 * time.Millisecond):
		}
		if b, err := os.ReadFile(w.logPath); err == nil && int64(len(b)) > from &&
			bytes.Contains(b[from:], []byte("lakepipe worker running")) {
			return
		}
	}
}

// kill SIGKILLs the worker (no graceful stop: activities die mid-step) and
// reaps it. It returns the pid and how long the process had run.
func (w *workerProc) kill() (int, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd == nil {
		return 0, 0
	}
	pid, up := w.cmd.Process.Pid, time.Since(w.started)
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
	w.cmd = nil
	return pid, up
}

// tail returns the last n lines of the worker's log (all its runs).
func (w *workerProc) tail(n int) string {
	b, _ := os.ReadFile(w.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// endWorkerProcs registers the end of a test that runs its pipes on
// worker processes: the schema's pipe workflows are terminated, the
// workers killed (their logs' ends shown when the test failed) and the
// orchestrator closed.
func endWorkerProcs(t *testing.T, s *Stack, orch *orchestrator.Temporal, workers ...*workerProc) {
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		if _, c, err := openCatalog(); err == nil {
			pipes, _ := c.List(cctx, catalog.KindPipe, s.Schema)
			for _, p := range pipes {
				_ = orch.Terminate(cctx, s.Eng.PipeWorkflowID(p.Name), "test finished")
			}
		}
		for _, w := range workers {
			w.kill()
			if t.Failed() {
				t.Logf("%s (end):\n%s", w.logPath, w.tail(80))
			}
		}
		orch.Close()
	})
}

// faultSnap is the state of the pipe's target and load history at one moment.
type faultSnap struct {
	loaded   map[string]string // file path → load id, for files recorded LOADED
	other    map[string]string // file path → status, for any other record
	commits  map[uint64]int64  // rows of the target per commit id
	staged   map[uint64]int64  // rows of staging tables per commit id (never visible)
	rows     int64
	inVolume map[string]bool // files still in the volume
	// mutations of the target not done yet (with the volume listing):
	// the clean-up of a dead attempt, which goes on without the worker.
	mutations int
}

// TestPipeFaults proves exactly-once loading under worker crashes: a
// LIST_PURGE pipe loads N files (LAKEPIPE_FAULT_FILES, default 40) while its
// only worker, a `lakepipe worker` child process, is SIGKILLed during the
// load and restarted K times (LAKEPIPE_FAULT_KILLS, default 2). Afterwards
// every file is recorded LOADED once, the volume is empty and every row is
// in the table exactly once (count() = count(DISTINCT id) = the rows
// uploaded, each commit id tagging one file's rows).
//
// Between kills the pipe must load at least one file. Kill 1, 7, 13, … aims
// at a listing (the ListFiles activity running), kill 2, 4, 6, … at a file
// half inserted (a big file with part of its rows committed), the others
// land at a random moment up to 1.5 s after a file was loaded. Each kill is
// logged with what it left behind: rows inserted but not recorded, a file
// recorded but not purged, a file half inserted, a clean-up mutation.
// `./task test:faults` runs it with 200 files and 10 kills;
// LAKEPIPE_FAULT_SEED repeats a run's random choices.
//
// A kill inside an activity stalls the pipe until Temporal declares the
// attempt dead (the activities' heartbeat timeout) and retries it on the
// restarted worker, so each such kill costs that long.
func TestPipeFaults(t *testing.T) { runPipeFaults(t, false) }

// TestPipeFaultsReplicated is TestPipeFaults on the replicated cluster
// (one shard, two replicas): the worker runs in replicated mode and, at the
// end, each replica holds every row exactly once.
func TestPipeFaultsReplicated(t *testing.T) { runPipeFaults(t, true) }

func runPipeFaults(t *testing.T, replicated bool) {
	nFiles := faultEnvInt(t, "LAKEPIPE_FAULT_FILES", 40)
	nKills := faultEnvInt(t, "LAKEPIPE_FAULT_KILLS", 2)
	rowsPer := faultEnvInt(t, "LAKEPIPE_FAULT_ROWS", 300)
	batch := faultEnvInt(t, "LAKEPIPE_FAULT_BATCH", 6)
	// Big files make kills land in the middle of an INSERT: ClickHouse
	// squashes an INSERT's blocks into parts of min_insert_block_size_rows
	// (1,048,576) rows, so only a file with more rows than that can be
	// caught with part of its rows committed and the rest still coming.
	// Every second kill's share of the files holds one such file
	// (LAKEPIPE_FAULT_BIG_ROWS rows, default 2,000,000), and that kill
	// waits for the moment. LAKEPIPE_FAULT_BIG_ROWS=0 leaves them out.
	bigRows := 2_000_000
	if v := os.Getenv("LAKEPIPE_FAULT_BIG_ROWS"); v == "0" {
		bigRows = 0
	} else {
		bigRows = faultEnvInt(t, "LAKEPIPE_FAULT_BIG_ROWS", bigRows)
	}
	seed := testSeed(t, "LAKEPIPE_FAULT_SEED")
	rng := rand.New(rand.NewSource(seed))

	// The files: file i holds fileRows[i] rows, ids first[i]+1 onwards.
	chunkEnd := func(k int) int { return k * nFiles / (nKills + 1) } // files uploaded before kill k
	fileRows := make([]int64, nFiles)
	for i := range fileRows {
		fileRows[i] = int64(rowsPer)
	}
	nBig := 0
	aim := map[int]int{} // kill → index of the big file it aims at
	if bigRows > 0 {
		for k := 2; k <= nKills; k += 2 {
			if lo, hi := chunkEnd(k-1), chunkEnd(k); hi > lo {
				aim[k] = (lo + hi) / 2
				fileRows[aim[k]] = int64(bigRows)
				nBig++
			}
		}
	}
	first := make([]int64, nFiles)
	var want int64
	for i, n := range fileRows {
		first[i] = want
		want += n
	}
	t.Logf("fault test: %d files × %d rows (%d of them %d rows), %d rows in all, %d kills, MAX_FILES_PER_BATCH %d",
		nFiles, rowsPer, nBig, bigRows, want, nKills, batch)

	s := newStack(t)
	// Each kill inside an activity costs a heartbeat timeout (2 min) before
	// the retry: the stack's default 10-minute context is too short.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute+4*time.Minute*time.Duration(nKills))
	defer cancel()
	s.Ctx = ctx
	c3 := rawS3(t)
	bin := lakepipeBin(t)
	var replica2 *chstore.Store
	if replicated {
		replica2 = s.useReplicated(ctx)
	}

	// The test's engine starts workflows on a queue of its own; only the
	// child worker polls it.
	queue := "it-faults-" + s.ID
	orch := s.useQueue(queue)
	w := &workerProc{t: t, bin: bin, queue: queue, logPath: t.TempDir() + "/worker.log"}
	if replicated {
		w.env = replicatedWorkerEnv
	}
	endWorkerProcs(t, s, orch, w)
	if replicated {
		// endWorkerProcs finds pipes in the single-node catalog; this
		// one is in the cluster's (cleanups run last registered first).
		t.Cleanup(func() {
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer ccancel()
			_ = orch.Terminate(cctx, s.Eng.PipeWorkflowID("fault_pipe"), "test finished")
		})
	}
	w.start()

	s.run(`CREATE TABLE fault_t (id BIGINT, payload STRING, n INT)`)
	vol := s.volume("fault_vol", "incoming", false)
	s.run(fmt.Sprintf(`CREATE PIPE fault_pipe INGEST_MODE = 'LIST_PURGE' POLL_INTERVAL_IN_SECONDS = '1' MAX_FILES_PER_BATCH = '%d'
		AS COPY INTO fault_t FROM VOLUME %s USING CSV`, batch, vol))

	db := s.Schema
	tableName := db + ".fault_t"
	fileName := func(i int) string { return fmt.Sprintf("f%05d.csv", i) }
	rowsOfPath := map[string]int64{}
	full := map[int64]bool{}
	for i, n := range fileRows {
		rowsOfPath[fileName(i)] = n
		full[n] = true
	}
	start := time.Now()
	since := func() string { return fmt.Sprintf("%6.1fs", time.Since(start).Seconds()) }

	// A reader polls count() the whole time: rows of an attempt that a
	// retry later removes must never show beside the rows that stay, so
	// no count it reads may exceed the final one.
	var highest atomic.Int64
	var reads atomic.Int64
	stopReader := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stopReader:
				return
			case <-time.After(100 * time.Millisecond):
			}
			n, err := s.Store.Strings(ctx, "SELECT count() FROM "+chsql.Table(db, "fault_t"))
			if err != nil || len(n) != 1 {
				continue // the server restarting, or the context ending
			}
			v, _ := strconv.ParseInt(n[0], 10, 64)
			reads.Add(1)
			for {
				h := highest.Load()
				if v <= h || highest.CompareAndSwap(h, v) {
					break
				}
			}
		}
	}()
	stopReading := sync.OnceFunc(func() { close(stopReader); <-readerDone })
	defer stopReading()

	snap := func(withVolume bool) faultSnap {
		t.Helper()
		sn := faultSnap{loaded: map[string]string{}, other: map[string]string{}, commits: map[uint64]int64{}, staged: map[uint64]int64{}, inVolume: map[string]bool{}}
		res, err := s.Store.Query(ctx, "SELECT file_path, argMax(status, version), argMax(load_id, version) FROM lakepipe.load_history WHERE table_name = "+
			chsql.QuoteString(tableName)+" AND pipe_name = 'fault_pipe' GROUP BY file_path")
		if err != nil {
			t.Fatalf("read load_history: %v", err)
		}
		for _, r := range res.Rows {
			if jobs.FileStatus(r[1].(string)) == jobs.FileLoaded {
				sn.loaded[r[0].(string)] = r[2].(string)
			} else {
				sn.other[r[0].(string)] = r[1].(string)
			}
		}
		res, err = s.Store.Query(ctx, "SELECT "+chsql.QuoteIdent(core.CommitColumn)+", count() FROM "+chsql.Table(db, "fault_t")+" GROUP BY "+chsql.QuoteIdent(core.CommitColumn))
		if err != nil {
			t.Fatalf("read fault_t: %v", err)
		}
		for _, r := range res.Rows {
			n := toInt64(r[1])
			sn.commits[r[0].(uint64)] = n
			sn.rows += n
		}
		// Large files load into staging tables (stage_<commit>_<attempt>)
		// before their rows show.
		res, err = s.Store.Query(ctx, "SELECT table, sum(rows) FROM system.parts WHERE database = 'lakepipe_tmp' AND startsWith(table, 'stage_') AND active GROUP BY table")
		if err != nil {
			t.Fatalf("read staging tables: %v", err)
		}
		for _, r := range res.Rows {
			var c uint64
			if _, err := fmt.Sscanf(r[0].(string), "stage_%016x_", &c); err == nil {
				sn.staged[c] += toInt64(r[1])
			}
		}
		if withVolume {
			for _, f := range s.files("incoming") {
				sn.inVolume[f] = true
			}
			table := "fault_t"
			if replicated {
				table += "__lp_shard"
			}
			m, err := s.Store.Strings(ctx, "SELECT count() FROM system.mutations WHERE database = "+chsql.QuoteString(db)+
				" AND table = "+chsql.QuoteString(table)+" AND is_done = 0")
			if err == nil && len(m) == 1 {
				sn.mutations, _ = strconv.Atoi(m[0])
			}
		}
		return sn
	}

	// The uploader: files arrive throughout the run. Before kill k it
	// uploads no further than (k+1)/(K+1) of the files, so that every kill
	// finds files to load.
	var kills atomic.Int32
	var uploaded atomic.Int32
	upErr := make(chan error, 1)
	upDone := make(chan struct{})
	go func() {
		defer close(upDone)
		urng := rand.New(rand.NewSource(seed + 1))
		for i := 0; i < nFiles; i++ {
			for i >= chunkEnd(int(kills.Load())+1) && int(kills.Load()) < nKills {
				select {
				case <-ctx.Done():
					upErr <- ctx.Err()
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			var b bytes.Buffer
			for j := int64(0); j < fileRows[i]; j++ {
				fmt.Fprintf(&b, "%d,file %d row %d,%d\n", first[i]+j+1, i, j, j)
			}
			key := s.key("incoming/" + fileName(i))
			if _, err := c3.PutObject(ctx, s3Bucket, key, bytes.NewReader(b.Bytes()), int64(b.Len()), minio.PutObjectOptions{ContentType: "text/csv"}); err != nil {
				upErr <- fmt.Errorf("upload %s: %w", key, err)
				return
			}
			uploaded.Add(1)
			time.Sleep(time.Duration(urng.Intn(30)) * time.Millisecond)
		}
	}()

	// progress waits until the pipe records a file after base, so that
	// the pipe moves on between kills (rather than a retry being killed
	// again and again). It returns false when there is nothing to load:
	// every file is loaded, or every file uploaded so far for a while.
	progress := func(base faultSnap, what string) bool {
		t.Helper()
		deadline := time.Now().Add(6 * time.Minute)
		var idle time.Time
		for {
			select {
			case err := <-upErr:
				t.Fatal(err)
			default:
			}
			cur := snap(false)
			switch {
			case len(cur.loaded) == nFiles:
				return false
			case len(cur.loaded) > len(base.loaded):
				return true
			case len(cur.loaded)+len(cur.other) < int(uploaded.Load()):
				idle = time.Time{}
			case idle.IsZero():
				idle = time.Now()
			case time.Since(idle) > 5*time.Second:
				return false
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no file loaded within 6 minutes (%d files LOADED, %d rows, %d uploaded)\nworker log:\n%s",
					what, len(cur.loaded), cur.rows, uploaded.Load(), w.tail(60))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	type killRec struct {
		at, recovery time.Duration
		landed       string
	}
	// partial waits until some load has committed part of a file's rows
	// (rows under an unrecorded commit id that are not a whole file).
	// It gives up once the file it aims at is loaded.
	partial := func(path string, limit time.Duration) bool {
		deadline := time.Now().Add(limit)
		for time.Now().Before(deadline) {
			cur := snap(false)
			recorded := map[string]bool{}
			for _, id := range cur.loaded {
				recorded[id] = true
			}
			for c, n := range cur.commits {
				if !recorded[fmt.Sprintf("%016x", c)] && !full[n] {
					return true
				}
			}
			for c, n := range cur.staged {
				if !recorded[fmt.Sprintf("%016x", c)] && n > 0 {
					return true
				}
			}
			if _, done := cur.loaded[path]; done || len(cur.loaded) == nFiles {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
		return false
	}

	// listing waits until the pipe's ListFiles activity runs on the
	// worker (Temporal's view of the workflow's pending activities).
	tc, err := orch.Client()
	if err != nil {
		t.Fatal(err)
	}
	wfID := s.Eng.PipeWorkflowID("fault_pipe")
	listing := func(limit time.Duration) bool {
		deadline := time.Now().Add(limit)
		for time.Now().Before(deadline) {
			d, err := tc.DescribeWorkflowExecution(ctx, wfID, "")
			if err != nil {
				t.Fatalf("describe %s: %v", wfID, err)
			}
			for _, a := range d.GetPendingActivities() {
				if a.GetActivityType().GetName() == "ListFiles" && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
					return true
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	}

	var recs []killRec
	base := snap(false)
	for k := 1; k <= nKills; k++ {
		resumed := time.Now()
		busy := progress(base, fmt.Sprintf("before kill %d", k))
		if len(recs) > 0 {
			recs[len(recs)-1].recovery = time.Since(resumed)
		}
		how := ""
		if k%6 == 1 && busy {
			// Aimed: while the pipe lists the volume.
			seen := time.Now()
			if listing(2 * time.Minute) {
				how = fmt.Sprintf("aimed at a listing (ListFiles running), %.1fs after a file was loaded", time.Since(seen).Seconds())
			} else {
				how = "aimed at a listing but saw none within 2 minutes; killed now"
			}
		} else if big, ok := aim[k]; ok && busy {
			// Aimed: the moment a big file is half in.
			seen := time.Now()
			if partial(fileName(big), 5*time.Minute) {
				how = fmt.Sprintf("aimed at a half-inserted file, %.1fs after a file was loaded", time.Since(seen).Seconds())
			} else {
				how = fmt.Sprintf("aimed at a half-inserted %s but missed the moment; killed now", fileName(big))
			}
		} else {
			// A random moment of the ongoing load (or of idling, once
			// all files are in).
			delay := time.Duration(rng.Intn(1500)) * time.Millisecond
			time.Sleep(delay)
			how = fmt.Sprintf("%v after a file was loaded", delay)
		}
		pid, up := w.kill()
		at := time.Since(start)
		kills.Add(1)
		after := snap(true)
		landed := describeKill(after, full)
		if !busy {
			landed = "idle (nothing to load): " + landed
		}
		recs = append(recs, killRec{at: at, landed: landed})
		t.Logf("%6.1fs kill %d/%d: SIGKILL worker pid %d (up %.1fs, %s); %d/%d uploaded, %d LOADED, %d rows, %d files in the volume; %s",
			at.Seconds(), k, nKills, pid, up.Seconds(), how, uploaded.Load(), nFiles, len(after.loaded), after.rows, len(after.inVolume), landed)
		time.Sleep(time.Duration(rng.Intn(2000)) * time.Millisecond)
		w.start()
		t.Logf("%s restarted the worker (start %d)", since(), w.starts)
		base = snap(false)
	}

	// The last restart is done: wait until everything is in.
	resumed := time.Now()
	select {
	case err := <-upErr:
		t.Fatal(err)
	case <-upDone:
	}
	deadline := time.Now().Add(10 * time.Minute)
	var last faultSnap
	for {
		last = snap(true)
		if n := len(recs); n > 0 && recs[n-1].recovery == 0 && len(last.loaded) > len(base.loaded) {
			recs[n-1].recovery = time.Since(resumed)
		}
		if len(last.loaded)+len(last.other) >= nFiles && len(last.inVolume) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not converged 10 minutes after the last restart: %d/%d files LOADED, %d other records %v, %d rows, %d files still in the volume\nworker log:\n%s",
				len(last.loaded), nFiles, len(last.other), last.other, last.rows, len(last.inVolume), w.tail(60))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if n := len(recs); n > 0 && recs[n-1].recovery == 0 {
		recs[n-1].recovery = time.Since(resumed)
	}
	t.Logf("%s converged: %d files LOADED, %d rows", since(), len(last.loaded), last.rows)
	stopReading()
	t.Logf("a reader polling count() read %d times; the highest count it saw: %d (final %d)", reads.Load(), highest.Load(), want)
	if highest.Load() > want {
		t.Errorf("a reader saw %d rows, above the final %d: rows of an attempt later rolled back were visible", highest.Load(), want)
	}

	// Every file once, every row once.
	if len(last.other) > 0 {
		t.Errorf("files not LOADED: %v", last.other)
	}
	res := s.run(`SELECT count(*), count(DISTINCT id), min(id), max(id) FROM fault_t`)
	got := table(res)[0]
	t.Logf("fault_t: count() = %s, count(DISTINCT id) = %s, ids %s..%s; want %d each, ids 1..%d", got[0], got[1], got[2], got[3], want, want)
	if got[0] != fmt.Sprint(want) || got[1] != fmt.Sprint(want) || got[2] != "1" || got[3] != fmt.Sprint(want) {
		dup := s.run(`SELECT count(*) FROM (SELECT id FROM fault_t GROUP BY id HAVING count(*) > 1)`)
		t.Errorf("exactly-once broken: count() %s, count(DISTINCT id) %s, want %d; ids loaded more than once: %s; %s",
			got[0], got[1], want, scalar(t, dup), describeRows(last, rowsOfPath))
	}
	if replicated {
		// The other replica, on its own: the same rows, each once, once
		// replication has caught up.
		shard := chsql.Table(db, "fault_t__lp_shard")
		var last []string
		pipeWait(t, time.Minute, fmt.Sprintf("replica 2 does not hold every row once (count, distinct ids: %v; want %d)", &last, want), func() bool {
			var err error
			last, err = replica2.Strings(ctx, "SELECT concat(toString(count()), ' ', toString(uniqExact(id))) FROM "+shard)
			return err == nil && len(last) == 1 && last[0] == fmt.Sprintf("%d %d", want, want)
		})
	}
	// The commit tags agree: one per file, each with the file's rows, each
	// recorded.
	pathOf := map[string]string{}
	for p, id := range last.loaded {
		pathOf[id] = p
	}
	for c, n := range last.commits {
		if p, ok := pathOf[fmt.Sprintf("%016x", c)]; !ok {
			t.Errorf("%d rows carry commit id %016x, which load_history does not record", n, c)
		} else if n != rowsOfPath[p] {
			t.Errorf("commit %016x (%s) tags %d rows, want %d", c, p, n, rowsOfPath[p])
		}
	}
	if len(last.commits) != nFiles {
		t.Errorf("%d commit ids in fault_t, want one per file (%d)", len(last.commits), nFiles)
	}
	// The user's view agrees: load_history('fault_t') has one LOADED
	// record per file, with its rows.
	lh := s.run(`SELECT status, count(*), sum(rows_loaded) FROM load_history('fault_t') GROUP BY status`)
	wantRows(t, "load_history('fault_t') by status", lh, fmt.Sprintf("LOADED|%d|%d", nFiles, want))

	if st, state, reason, err := orch.PipeStatus(ctx, s.Eng.PipeWorkflowID("fault_pipe")); err != nil {
		t.Errorf("pipe status: %v", err)
	} else {
		if state != "RUNNING" {
			t.Errorf("pipe workflow is %s (%s), want RUNNING", state, reason)
		}
		if st != nil {
			t.Logf("pipe counters (this run of the workflow): %+v", st.Counters)
		}
	}

	var sum strings.Builder
	fmt.Fprintf(&sum, "fault injection: %d files, %d rows, %d kills, %.1fs in all\n", nFiles, want, nKills, time.Since(start).Seconds())
	for i, r := range recs {
		fmt.Fprintf(&sum, "  kill %2d at %6.1fs, next file loaded %5.1fs after the restart; the kill left: %s\n", i+1, r.at.Seconds(), r.recovery.Seconds(), r.landed)
	}
	t.Log(sum.String())
}

// describeKill says where a kill left the pipe's files, from the state
// right after it: loads with rows but no record died inserting or before
// recording; recorded files still in the volume died before the purge.
func describeKill(sn faultSnap, full map[int64]bool) string {
	recorded := map[string]bool{}
	for _, id := range sn.loaded {
		recorded[id] = true
	}
	var partial, complete []string
	for c, n := range sn.commits {
		if recorded[fmt.Sprintf("%016x", c)] {
			continue
		}
		if !full[n] {
			partial = append(partial, fmt.Sprintf("%016x:%d rows", c, n))
		} else {
			complete = append(complete, fmt.Sprintf("%016x:%d rows", c, n))
		}
	}
	var unpurged []string
	for p := range sn.loaded {
		if sn.inVolume[p] {
			unpurged = append(unpurged, p)
		}
	}
	var staged []string
	for c, n := range sn.staged {
		if !recorded[fmt.Sprintf("%016x", c)] {
			staged = append(staged, fmt.Sprintf("%016x:%d rows", c, n))
		}
	}
	sort.Strings(staged)
	sort.Strings(partial)
	sort.Strings(complete)
	sort.Strings(unpurged)
	var parts []string
	if len(staged) > 0 {
		parts = append(parts, fmt.Sprintf("%d load(s) died while staging (rows never visible) %v", len(staged), staged))
	}
	if len(partial) > 0 {
		parts = append(parts, fmt.Sprintf("%d load(s) died while inserting %v", len(partial), partial))
	}
	if len(complete) > 0 {
		parts = append(parts, fmt.Sprintf("%d load(s) died between insert and record %v", len(complete), complete))
	}
	if len(unpurged) > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s) died between record and purge %v", len(unpurged), unpurged))
	}
	if sn.mutations > 0 {
		parts = append(parts, fmt.Sprintf("%d clean-up DELETE mutation(s) of a dead attempt still running", sn.mutations))
	}
	if len(parts) == 0 {
		return "no load caught mid-file (between files, listing, or idle)"
	}
	return strings.Join(parts, "; ")
}

// describeRows lists the commit ids whose row counts are off, for a
// failure message.
func describeRows(sn faultSnap, rowsOfPath map[string]int64) string {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	recorded := map[string]string{}
	for p, id := range sn.loaded {
		recorded[id] = p
	}
	for c, n := range sn.commits {
		p := recorded[fmt.Sprintf("%016x", c)]
		if p == "" || n != rowsOfPath[p] {
			fmt.Fprintf(w, "commit %016x (file %q): %d rows; ", c, p, n)
		}
	}
	w.Flush()
	if b.Len() == 0 {
		return "every commit id tags one file's rows"
	}
	return b.String()
}

// toInt64 reads a ClickHouse count.
func toInt64(v any) int64 {
	switch x := v.(type) {
	case uint64:
		return int64(x)
	case int64:
		return x
	case uint32:
		return int64(x)
	}
	n, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	return n
}
