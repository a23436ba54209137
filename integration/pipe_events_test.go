//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// eventS3 is a versitygw of the test's own (with the stack's test
// credentials) that sends S3 event notifications to a webhook.
type eventS3 struct {
	Endpoint string // http://127.0.0.1:port
	Client   *minio.Client
	Bucket   string
}

// freePort returns a TCP port nobody listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEventS3 starts versitygw (posix backend on a temporary directory,
// one bucket) with --event-webhook-url webhook, and stops it when the test
// ends. The webhook must already answer: versitygw posts a test event while
// starting.
func startEventS3(t testing.TB, webhook string) *eventS3 {
	t.Helper()
	return startEventS3With(t, "--event-webhook-url", webhook)
}

// startEventS3With is startEventS3 with versitygw's event target given as
// its flags (--event-kafka-url …, --event-kafka-topic …).
func startEventS3With(t testing.TB, target ...string) *eventS3 {
	t.Helper()
	bin := stackBin("versitygw")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("versitygw is needed (deploy/local/install.sh): %v", err)
	}
	root := t.TempDir()
	const bucket = "events"
	if err := os.MkdirAll(filepath.Join(root, "gw", bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		// LOGFILE and WEBHOOK are versitygw's aliases for an access log and
		// an audit webhook (see deploy/local/start.sh).
		if !strings.HasPrefix(kv, "LOGFILE=") && !strings.HasPrefix(kv, "WEBHOOK=") && !strings.HasPrefix(kv, "VGW_") {
			env = append(env, kv)
		}
	}
	env = append(env, "ROOT_ACCESS_KEY_ID="+s3AccessKey, "ROOT_SECRET_ACCESS_KEY="+s3SecretKey)

	start := func(sidecar bool) (*exec.Cmd, *bytes.Buffer, string, bool) {
		port := freePort(t)
		args := append([]string{"--port", fmt.Sprintf("127.0.0.1:%d", port), "--region", s3Region, "--health", "/health", "--quiet"}, target...)
		args = append(args, "posix")
		if sidecar {
			meta := filepath.Join(root, "meta")
			_ = os.MkdirAll(meta, 0o755)
			args = append(args, "--sidecar", meta)
		}
		args = append(args, filepath.Join(root, "gw"))
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start versitygw: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				return nil, &out, "", false
			default:
			}
			if resp, err := http.Get(endpoint + "/health"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Cleanup(func() {
						_ = cmd.Process.Kill()
						<-exited
					})
					return cmd, &out, endpoint, true
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("versitygw did not answer on %s within 20 s:\n%s", endpoint, out.String())
		return nil, nil, "", false
	}
	_, out, endpoint, ok := start(false)
	if !ok && strings.Contains(out.String(), "xattr") {
		// No user extended attributes on this filesystem: keep metadata in
		// a sidecar folder, as deploy/local does.
		_, out, endpoint, ok = start(true)
	}
	if !ok {
		t.Fatalf("versitygw exited while starting:\n%s", out.String())
	}
	c, err := minio.New(strings.TrimPrefix(endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(s3AccessKey, s3SecretKey, ""), Region: s3Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &eventS3{Endpoint: endpoint, Client: c, Bucket: bucket}
}

// TestPipeEventNotification: an EVENT_NOTIFICATION pipe loads a file as soon
// as the object store reports it (webhook → worker /events → signal), long
// before its 300 s safety-net listing, and keeps the file.
func TestPipeEventNotification(t *testing.T) {
	s := newStack(t)
	addr := s.withWorker() // it must listen before versitygw starts
	gw := startEventS3(t, "http://"+addr+"/events")

	conn := "it_evconn_" + s.ID
	s.run(fmt.Sprintf(`CREATE STORAGE CONNECTION %s TYPE S3 ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = '%s' REGION = '%s'`,
		conn, gw.Endpoint, s3AccessKey, s3SecretKey, s3Region))
	s.dropAtEnd("STORAGE CONNECTION", conn)
	s.run(fmt.Sprintf(`CREATE EXTERNAL VOLUME ev_vol LOCATION 's3://%s/incoming/' USING CONNECTION %s DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE) RECURSIVE = TRUE`,
		gw.Bucket, conn))
	s.dropAtEnd("VOLUME", "ev_vol")
	s.pipeTable("t")
	s.run(`CREATE PIPE ev_pipe INGEST_MODE = 'EVENT_NOTIFICATION' AS COPY INTO t FROM VOLUME ev_vol USING CSV`)
	d := s.pipeDesc("ev_pipe")
	if d["ingest_mode"] != "EVENT_NOTIFICATION" || d["poll_interval_in_seconds"] != "300" || d["pipe_status"] != "RUNNING" {
		t.Errorf("DESC PIPE EXTENDED: ingest_mode %q poll_interval_in_seconds %q pipe_status %q, want EVENT_NOTIFICATION 300 RUNNING",
			d["ingest_mode"], d["poll_interval_in_seconds"], d["pipe_status"])
	}
	// The first listing runs at once on the empty volume; from then on only
	// an event (or the 300 s timer) starts a turn.
	pipeWait(t, 20*time.Second, "the pipe's first turn did not finish", func() bool { return s.pipeTurns("ev_pipe") >= 1 })

	put := func(key string, data []byte) {
		t.Helper()
		if _, err := gw.Client.PutObject(s.Ctx, gw.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	var want int64
	for i, f := range []struct {
		key  string
		rows int
	}{{"incoming/a.csv", 3}, {"incoming/2026/06/01/b.csv", 5}, {"elsewhere/c.csv", 2}} {
		put(f.key, csvRows(i*100, f.rows))
		if !strings.HasPrefix(f.key, "incoming/") {
			continue
		}
		want += int64(f.rows)
		took := pipeWait(t, 30*time.Second, f.key+" was not loaded", func() bool { return s.pipeCount("t") == want })
		t.Logf("event notification latency for %s: %v from upload to rows visible", f.key, took.Round(time.Millisecond))
		if took > 5*time.Second {
			t.Errorf("%s took %v to load, want a few seconds (the event drives the pipe)", f.key, took)
		}
	}
	// A file outside the volume is not the pipe's.
	pipeSteady(t, 2*time.Second, "a file outside the volume was loaded", func() bool { return s.pipeCount("t") == want })
	if want != 8 {
		t.Fatalf("want %d", want)
	}
	wantRows(t, "t", s.run("SELECT count(DISTINCT id), min(id), max(id) FROM t"), "8|0|104")

	// EVENT_NOTIFICATION keeps the files.
	for _, key := range []string{"incoming/a.csv", "incoming/2026/06/01/b.csv"} {
		if _, err := gw.Client.StatObject(s.Ctx, gw.Bucket, key, minio.StatObjectOptions{}); err != nil {
			t.Errorf("%s is gone after loading (EVENT_NOTIFICATION keeps files): %v", key, err)
		}
	}
	h := s.pipeHistory("t")
	if len(h) != 2 || h["a.csv"]["status"] != "LOADED" || h["a.csv"]["rows_loaded"] != "3" ||
		h["2026/06/01/b.csv"]["status"] != "LOADED" || h["2026/06/01/b.csv"]["rows_loaded"] != "5" {
		t.Errorf("load_history = %v, want a.csv and 2026/06/01/b.csv LOADED", h)
	}
	// An event for a file loaded already does not load it again.
	turns := s.pipeTurns("ev_pipe")
	put("incoming/a.csv", csvRows(900, 4))
	pipeWait(t, 10*time.Second, "the event of the re-uploaded a.csv started no turn", func() bool {
		return s.pipeTurns("ev_pipe") > turns
	})
	if n := s.pipeCount("t"); n != 8 {
		t.Errorf("re-uploading a.csv loaded it again: t has %d rows, want 8", n)
	}
}
