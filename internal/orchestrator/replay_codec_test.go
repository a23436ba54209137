package orchestrator_test

import (
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/orchestrator"
	"github.com/lakepipe/lakepipe/internal/payloadcodec"
	"github.com/lakepipe/lakepipe/internal/signalguard"
	"github.com/lakepipe/lakepipe/workflows"
)

// TestReplayWithCodec replays the histories recorded before payloads were
// encrypted (workflows/testdata) with the converters of a client that has
// LAKEPIPE_CODEC_KEY set: turning encryption on does not break running
// workflows, as their clear payloads pass through the codec.
func TestReplayWithCodec(t *testing.T) {
	codec, err := payloadcodec.Parse("k1:" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	dc, fc := orchestrator.Config{Codec: codec}.Converters()
	files, _ := filepath.Glob(filepath.Join("..", "..", "workflows", "testdata", "*.json*"))
	if len(files) == 0 {
		t.Fatal("no histories in workflows/testdata")
	}
	// Histories recorded with this test's key (k1, all zero bytes):
	// pipe_signal_refused.json is TestRequireEncryptedSignals's pipe, on a
	// worker that requires encryption: clear signals from the Temporal CLI
	// (pause, drop, files) dropped, then an encrypted pause and resume.
	encrypted, _ := filepath.Glob(filepath.Join("testdata", "*.json*"))
	if len(encrypted) == 0 {
		t.Fatal("no histories in internal/orchestrator/testdata")
	}
	files = append(files, encrypted...)
	// Child workflow ids derive from the parent's id and run id, so those
	// histories replay under their original execution (as in
	// workflows/replay_dynamic_table_test.go).
	original := map[string]workflow.Execution{
		"dynamic_table_chain.json":  {ID: "dt.default.it_eb79927566.fast", RunID: "01a237f4-27d2-73da-8c60-4e1a9bd0984e"},
		"refresh_chain_manual.json": {ID: "dt.default.it_eb79927566.grand.manual.d8176ed27f59e728", RunID: "01a237f4-2430-78c0-810c-f4b783f01674"},
	}
	// A run decides by the setting it recorded: replayers that require
	// encryption and replayers that do not replay every history alike.
	for _, f := range files {
		for _, require := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/require=%v", filepath.Base(f), require), func(t *testing.T) {
				guard := []interceptor.WorkerInterceptor{&signalguard.Interceptor{Require: require}}
				r, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{DataConverter: dc, FailureConverter: fc, Interceptors: guard})
				if err != nil {
					t.Fatal(err)
				}
				workflows.Register(r)
				fh, err := os.Open(f)
				if err != nil {
					t.Fatal(err)
				}
				defer fh.Close()
				var rd io.Reader = fh
				if strings.HasSuffix(f, ".gz") {
					zr, err := gzip.NewReader(fh)
					if err != nil {
						t.Fatal(err)
					}
					rd = zr
				}
				h, err := client.HistoryFromJSON(rd, client.HistoryJSONOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := r.ReplayWorkflowHistoryWithOptions(nil, h, sdkworker.ReplayWorkflowHistoryOptions{OriginalExecution: original[filepath.Base(f)]}); err != nil {
					t.Fatalf("replay %s with the codec: %v", f, err)
				}
			})
		}
	}
}
