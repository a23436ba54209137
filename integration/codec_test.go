//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/payloadcodec"
	"github.com/lakepipe/lakepipe/internal/signalguard"
	"github.com/lakepipe/lakepipe/workflows"
)

// TestCodecEncryptsHistory runs a pipe with LAKEPIPE_CODEC_KEY set for the
// worker, the engine and the lakepipe command, then reads the pipe's
// workflow history from Temporal: every payload in it is encrypted, and
// nothing the pipe handled (table, volume location, file names, a bad
// file's error, the storage connection's keys) is in the history's bytes.
// The codec server (lakepipe codec-server) gives the clear JSON back to a
// caller with its token, and nothing to one without.
func TestCodecEncryptsHistory(t *testing.T) {
	s := newStack(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	spec := "it" + s.ID + ":" + base64.StdEncoding.EncodeToString(key)
	codec, err := payloadcodec.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	queue := "it-" + s.ID
	s.Eng, s.Orch, _ = pipeWorkerWith(t, s.Eng, s.Schema, orchestrator.Config{Address: temporalAddr, TaskQueue: queue, Codec: codec})

	tbl := "sealed_" + s.ID
	good, bad := "orders-"+randID(4)+".csv", "broken-"+randID(4)+".csv"
	poison := "poison" + randID(4)
	s.volume("enc_vol", "enc-landing", false)
	s.pipeTable(tbl)
	s.run(fmt.Sprintf(`CREATE PIPE enc_pipe POLL_INTERVAL_IN_SECONDS = '1' AS COPY INTO %s FROM VOLUME enc_vol USING CSV`, tbl))
	s.put("enc-landing/"+good, csvRows(1, 3))
	s.put("enc-landing/"+bad, []byte("1,a\n"+poison+",b\n"))
	pipeWait(t, time.Minute, "the pipe did not load the good file and fail the bad one", func() bool {
		h := s.pipeHistory(tbl)
		return h[good]["status"] == "LOADED" && h[bad]["status"] == "FAILED"
	})
	// The engine reads the encrypted status query.
	pipeWait(t, 30*time.Second, "DESC PIPE EXTENDED does not show the counters", func() bool {
		d := s.pipeDesc("enc_pipe")
		return d["pipe_status"] == "RUNNING" && d["files_loaded"] == "1" && d["files_failed"] == "1"
	})

	// The lakepipe command, with the key: an update (its reply encrypted
	// by the worker, decrypted by the command's client) and the status
	// query.
	cliEnv := []string{"LAKEPIPE_CODEC_KEY_FILE=", "LAKEPIPE_SCHEMA=" + s.Schema, "LAKEPIPE_CLICKHOUSE_ADDR=" + chAddr, "LAKEPIPE_TEMPORAL_ADDR=" + temporalAddr, "LAKEPIPE_TASK_QUEUE=" + queue}
	out := cli(t, t.TempDir(), append(cliEnv, "LAKEPIPE_CODEC_KEY="+spec), "", "sql", "--format", "csv", "-e", "ALTER PIPE enc_pipe REFRESH; DESC PIPE EXTENDED enc_pipe")
	if out.Code != 0 || !strings.Contains(out.Stdout, "pipe_status,RUNNING") || !strings.Contains(out.Stdout, "files_loaded,1") {
		t.Errorf("lakepipe sql with LAKEPIPE_CODEC_KEY: exit %d\nstdout:\n%s\nstderr:\n%s", out.Code, out.Stdout, out.Stderr)
	}
	// Without it, DESC PIPE says why it cannot read the status.
	out = cli(t, t.TempDir(), append(cliEnv, "LAKEPIPE_CODEC_KEY="), "", "sql", "--format", "csv", "-e", "DESC PIPE EXTENDED enc_pipe")
	if !strings.Contains(out.Stdout+out.Stderr, "holds no key: set LAKEPIPE_CODEC_KEY") {
		t.Errorf("lakepipe sql without LAKEPIPE_CODEC_KEY: exit %d\nstdout:\n%s\nstderr:\n%s", out.Code, out.Stdout, out.Stderr)
	}
	// A signal, as the Temporal CLI or an older client sends it (through a
	// client with the key), then a few more turns, so the history holds
	// both and the turns after them.
	if err := s.Orch.Signal(s.Ctx, s.Eng.PipeWorkflowID("enc_pipe"), jobs.SignalRefresh, nil); err != nil {
		t.Fatal(err)
	}
	s.pipeWaitTurns("enc_pipe", 2, 30*time.Second)

	// ---- the history, as Temporal stores it ----
	cl, err := s.Orch.Client()
	if err != nil {
		t.Fatal(err)
	}
	wfID := s.Eng.PipeWorkflowID("enc_pipe")
	var events []*historypb.HistoryEvent
	it := cl.GetWorkflowHistory(s.Ctx, wfID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", wfID, err)
		}
		events = append(events, ev)
	}
	var raw []byte
	var sealed []*commonpb.Payload
	var input *commonpb.Payload
	kinds := map[string]int{}
	for _, ev := range events {
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
		walkPayloads(ev.ProtoReflect(), ev.GetEventType().String(), func(where string, p *commonpb.Payload) {
			kinds[ev.GetEventType().String()]++
			if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != payloadcodec.Encoding {
				t.Errorf("%s: a payload in clear (encoding %q): %.200s", where, enc, p.GetData())
				return
			}
			if id := string(p.GetMetadata()[payloadcodec.MetadataKeyID]); id != codec.EncryptKeyID() {
				t.Errorf("%s: payload encrypted with key %q, want %q", where, id, codec.EncryptKeyID())
			}
			sealed = append(sealed, p)
		})
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil && len(a.GetInput().GetPayloads()) > 0 && input == nil {
			input = a.GetInput().GetPayloads()[0]
		}
	}
	t.Logf("%d events, %d payloads, all encrypted: %v", len(events), len(sealed), kinds)
	for _, want := range []string{"WorkflowExecutionStarted", "ActivityTaskScheduled", "ActivityTaskCompleted", "WorkflowExecutionSignaled", "WorkflowExecutionUpdateCompleted", "WorkflowPropertiesModified", "MarkerRecorded"} {
		if kinds[want] == 0 {
			t.Errorf("the history has no payload of %s: the check above proved less than it should", want)
		}
	}
	if input == nil {
		t.Fatal("the history has no workflow input")
	}
	// The encrypted history replays with the keys (what a worker restarted
	// on it does), and not without them.
	for _, withKey := range []bool{true, false} {
		cfg := orchestrator.Config{}
		if withKey {
			cfg.Codec = codec
		}
		dc, fc := cfg.Converters()
		r, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{DataConverter: dc, FailureConverter: fc, Interceptors: signalguard.Replaying()})
		if err != nil {
			t.Fatal(err)
		}
		workflows.Register(r)
		quiet := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
		err = r.ReplayWorkflowHistoryWithOptions(quiet, &historypb.History{Events: events}, sdkworker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: wfID}})
		if withKey && err != nil {
			t.Errorf("the encrypted history does not replay with the key: %v", err)
		}
		if !withKey && err == nil {
			t.Error("the encrypted history replays without the key: it was not encrypted")
		}
	}
	for what, secret := range map[string]string{
		"the table name": tbl, "the volume location": s.location("enc-landing"), "the volume directory": "enc-landing",
		"a file name": good, "the bad file's name": bad, "the bad file's content": poison,
		"the S3 access key": s3AccessKey, "the S3 secret key": s3SecretKey, "the codec key": base64.StdEncoding.EncodeToString(key),
	} {
		if bytes.Contains(raw, []byte(secret)) {
			i := bytes.Index(raw, []byte(secret))
			t.Errorf("%s (%q) is in the history's bytes: …%q…", what, secret, raw[max(0, i-80):min(len(raw), i+80)])
		}
	}

	// ---- the codec server ----
	token := "it-token-" + randID(12)
	addr, logs := startCodecServer(t, spec, token)
	decode := func(auth string, ps []*commonpb.Payload) (int, []*commonpb.Payload) {
		t.Helper()
		body, err := protojson.Marshal(&commonpb.Payloads{Payloads: ps})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(s.Ctx, "POST", "http://"+addr+"/decode", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Namespace", "default")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, nil
		}
		var out commonpb.Payloads
		if err := protojson.Unmarshal(b, &out); err != nil {
			t.Fatalf("codec server answer %.300s: %v", b, err)
		}
		return resp.StatusCode, out.Payloads
	}
	if code, _ := decode("", []*commonpb.Payload{input}); code != http.StatusUnauthorized {
		t.Errorf("decode without a token: status %d, want 401", code)
	}
	if code, _ := decode("Bearer wrong-"+token, []*commonpb.Payload{input}); code != http.StatusUnauthorized {
		t.Errorf("decode with a wrong token: status %d, want 401", code)
	}
	code, clear := decode("Bearer "+token, []*commonpb.Payload{input})
	if code != http.StatusOK || len(clear) != 1 {
		t.Fatalf("decode of the workflow input: status %d, %d payloads", code, len(clear))
	}
	if enc := string(clear[0].GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		t.Errorf("decoded input has encoding %q, want %s", enc, converter.MetadataEncodingJSON)
	}
	var in jobs.PipeInput
	if err := json.Unmarshal(clear[0].GetData(), &in); err != nil || in.Params.Name != "enc_pipe" || in.Params.Schema != s.Schema {
		t.Errorf("decoded input %s is not the pipe's input (%v)", clear[0].GetData(), err)
	}
	// Every payload decodes, and together they hold what the history
	// bytes must not: the check above was not vacuous.
	code, all := decode("Bearer "+token, sealed)
	if code != http.StatusOK || len(all) != len(sealed) {
		t.Fatalf("decode of every payload: status %d, %d of %d payloads", code, len(all), len(sealed))
	}
	var joined []byte
	for _, p := range all {
		joined = append(joined, p.GetData()...)
	}
	for _, want := range []string{good, bad} {
		if !bytes.Contains(joined, []byte(want)) {
			t.Errorf("no decoded payload holds %q", want)
		}
	}
	// The codec server logged requests, not what it decoded, nor tokens.
	time.Sleep(100 * time.Millisecond)
	l := logs()
	if !strings.Contains(l, `"path":"/decode"`) {
		t.Errorf("the codec server logged no request:\n%s", l)
	}
	for _, secret := range []string{token, spec[len("it"+s.ID+":"):], good, bad, s.Schema + `","Name"`} {
		if strings.Contains(l, secret) {
			t.Errorf("the codec server's log holds %q:\n%s", secret, l)
		}
	}
}

// walkPayloads calls fn with every Payload in m, search attributes (kept
// in clear by design: Temporal indexes them) excepted.
func walkPayloads(m protoreflect.Message, where string, fn func(where string, p *commonpb.Payload)) {
	if m.Descriptor().FullName() == "temporal.api.common.v1.SearchAttributes" {
		return
	}
	if p, ok := m.Interface().(*commonpb.Payload); ok {
		fn(where, p)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := where + "." + string(fd.Name())
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				walkPayloads(v.List().Get(i).Message(), fmt.Sprintf("%s[%d]", name, i), fn)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				walkPayloads(mv.Message(), name+"["+k.String()+"]", fn)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			walkPayloads(v.Message(), name, fn)
		}
		return true
	})
}

// startCodecServer runs `lakepipe codec-server` on a free port with the
// given keys and token, stopped at the end of the test. It returns the
// address and a function returning what the server logged so far.
func startCodecServer(t *testing.T, keys, token string) (string, func() string) {
	t.Helper()
	return startServer(t, []string{"codec-server"}, "lakepipe codec server running",
		"LAKEPIPE_CODEC_KEY_FILE=", "LAKEPIPE_CODEC_KEY="+keys, "LAKEPIPE_CODEC_TOKEN="+token, "LAKEPIPE_CODEC_ADDR=127.0.0.1:0")
}

// startServer runs a lakepipe server command with the test's environment
// plus env, logging JSON, until the end of the test. It returns the addr
// of its log line whose message is ready, and what it logged so far.
func startServer(t *testing.T, args []string, ready string, env ...string) (string, func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, lakepipeBin(t), args...)
	cmd.Env = append(append(os.Environ(), env...), "LAKEPIPE_LOG_FORMAT=json")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log strings.Builder
	addrs := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == ready {
				addrs <- line.Addr
			}
		}
	}()
	logs := func() string {
		mu.Lock()
		defer mu.Unlock()
		return log.String()
	}
	t.Cleanup(func() {
		cancel()
		<-scanned
		_ = cmd.Wait()
	})
	select {
	case addr := <-addrs:
		return addr, logs
	case <-scanned:
		t.Fatalf("lakepipe %s ended:\n%s", args[0], logs())
	case <-time.After(60 * time.Second):
		t.Fatalf("lakepipe %s did not start within 60 s:\n%s", args[0], logs())
	}
	return "", nil
}
