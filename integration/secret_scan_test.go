//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecretScan is issue 20's secret scan: storage connections and Kafka
// pipes whose secrets hold quotes, backslashes and unicode are made through
// the lakepipe command (-f, --echo), used, failed (the endpoint refuses the
// keys, the Kafka server has no SASL) and the worker restarted; then every
// secret is searched, as bytes, in the command's outputs, SHOW and DESC,
// the worker's log, /metrics and arguments, every pipe workflow's Temporal
// history, and ClickHouse's files of the catalog after OPTIMIZE FINAL:
// zero hits.
func TestSecretScan(t *testing.T) {
	s := newStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s.Ctx = ctx
	mark := randID(8) // in the secrets only
	secrets := []string{
		`q'uo"te-` + mark + `-a`,
		`back\slash\\n-` + mark + `-b`,
		"ünï-秘密-" + mark + "-c",
	}
	// quote writes a SQL string literal: '' for a quote, \\ for a backslash.
	quote := func(v string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), "'", "''") + "'"
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := ln.Addr().String()
	ln.Close()
	queue := "it-scan-" + s.ID
	orch := s.useQueue(queue)
	w := &workerProc{t: t, bin: lakepipeBin(t), queue: queue, logPath: t.TempDir() + "/worker.log", http: httpAddr}
	endWorkerProcs(t, s, orch, w)
	w.start()

	var script strings.Builder
	fmt.Fprintf(&script, "CREATE TABLE scan_logs (log_time TIMESTAMP, level STRING, message STRING);\n")
	for i, sec := range secrets {
		conn := fmt.Sprintf("scan_conn_%s_%d", s.ID, i)
		s.dropAtEnd("STORAGE CONNECTION", conn)
		fmt.Fprintf(&script, "CREATE STORAGE CONNECTION %s TYPE S3 ENDPOINT = '%s' ACCESS_ID = '%s' ACCESS_KEY = %s;\n", conn, s3Endpoint, s3AccessKey, quote(sec))
		// Fails: the endpoint refuses the key (its error must not quote it).
		fmt.Fprintf(&script, "CREATE EXTERNAL VOLUME scan_vol_%d LOCATION '%s' USING CONNECTION %s DIRECTORY = (ENABLE = TRUE);\n", i, s.location("scan"), conn)
		topic := fmt.Sprintf("scan_%s_%d", s.ID, i)
		kafkaTopic(t, topic, 1)
		fmt.Fprintf(&script, "%s;\n", strings.Replace(kafkaPipeSQL(fmt.Sprintf("scan_pipe_%d", i), "scan_logs", topic, topic, 0, ""), "map()",
			"map('security.protocol', 'SASL_PLAINTEXT', 'sasl.mechanism', 'PLAIN', 'sasl.username', 'u', 'sasl.password', "+quote(sec)+")", 1))
	}
	var show strings.Builder
	show.WriteString("SHOW CONNECTIONS;\nSHOW PIPES;\n")
	for i := range secrets {
		fmt.Fprintf(&show, "DESC CONNECTION scan_conn_%s_%d;\nDESC PIPE EXTENDED scan_pipe_%d;\n", s.ID, i, i)
	}
	script.WriteString(show.String())
	start := time.Now()
	var outputs strings.Builder
	// The command starts the pipes on the test worker's queue.
	cliEnv := []string{"LAKEPIPE_SCHEMA=" + s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR=" + chAddr, "LAKEPIPE_TASK_QUEUE=" + queue}
	r := cli(t, t.TempDir(), cliEnv, "", "sql", "--echo", "--continue-on-error", "-f", writeFile(t, "scan.sql", script.String()))
	outputs.WriteString(r.Stdout + r.Stderr)
	r = cli(t, t.TempDir(), cliEnv, show.String(), "sql", "--echo", "--format", "json", "--continue-on-error")
	outputs.WriteString(r.Stdout + r.Stderr)
	t.Logf("scripts ran in %v", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(outputs.String(), "scan_pipe_2") {
		t.Fatalf("the script did not run:\n%s", outputs.String())
	}

	// The pipes run and fail (no SASL at the Kafka server); the worker is
	// restarted in the middle.
	time.Sleep(4 * time.Second)
	pid := w.cmd.Process.Pid
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	w.kill()
	w.start()
	time.Sleep(4 * time.Second)
	for i := range secrets {
		outputs.WriteString(rowsText(s.run(fmt.Sprintf("DESC PIPE EXTENDED scan_pipe_%d", i))))
	}
	outputs.WriteString(rowsText(s.run("SHOW PIPES")))

	metrics := ""
	if resp, err := http.Get("http://" + httpAddr + "/metrics"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		metrics = string(b)
	} else {
		t.Errorf("GET /metrics: %v", err)
	}
	logText, _ := os.ReadFile(w.logPath)

	// Temporal histories of the pipes' workflows.
	var histories strings.Builder
	temporalBin := stackBin("temporal")
	for i := range secrets {
		id := s.Eng.PipeWorkflowID(fmt.Sprintf("scan_pipe_%d", i))
		out, err := exec.CommandContext(ctx, temporalBin, "workflow", "show", "--address", temporalAddr, "-w", id, "-o", "json").CombinedOutput()
		if err != nil {
			t.Errorf("temporal workflow show %s: %v\n%s", id, err, out)
		}
		histories.Write(out)
	}
	if !strings.Contains(histories.String(), "ACTIVITY_TASK_SCHEDULED") {
		t.Errorf("the pipes' histories hold no activity: the scan of them proves little")
	}
	t.Logf("scanned after %v", time.Since(start).Round(time.Millisecond))

	// The catalog's files after OPTIMIZE FINAL.
	if err := s.Store.Exec(ctx, "OPTIMIZE TABLE lakepipe.objects FINAL"); err != nil {
		t.Fatal(err)
	}
	paths, err := s.Store.Strings(ctx, "SELECT path FROM system.parts WHERE database = 'lakepipe' AND table = 'objects' AND active LIMIT 1")
	if err != nil || len(paths) == 0 {
		t.Fatalf("the parts of lakepipe.objects: %v %q", err, paths)
	}
	dataDir := filepath.Dir(filepath.Clean(paths[0]))

	places := map[string]string{
		"the lakepipe command's output": outputs.String(),
		"the worker's log":              string(logText),
		"/metrics":                      metrics,
		"the worker's arguments":        string(cmdline),
		"Temporal histories":            histories.String(),
	}
	for _, sec := range secrets {
		spellings := []string{sec, quote(sec), strings.ReplaceAll(sec, `\`, `\\`)}
		for where, text := range places {
			for _, sp := range spellings {
				if strings.Contains(text, sp) {
					t.Errorf("%s holds the secret %q (as %q)", where, sec, sp)
				}
			}
		}
		if _, err := os.Stat(dataDir); err == nil {
			if n := filesHolding(t, dataDir, sec); n != 0 {
				t.Errorf("%d files of lakepipe.objects hold the secret %q", n, sec)
			}
		}
	}
	// The mark itself shows nowhere either (a secret cut or re-encoded).
	for where, text := range places {
		if strings.Contains(text, mark) {
			i := strings.Index(text, mark)
			t.Errorf("%s holds a piece of a secret: …%s…", where, text[max(0, i-40):min(len(text), i+40)])
		}
	}
}
