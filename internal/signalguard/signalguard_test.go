package signalguard_test

import (
	"encoding/base64"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lakepipe/lakepipe/internal/payloadcodec"
	"github.com/lakepipe/lakepipe/internal/signalguard"
)

// waitSignal returns the value of the first "poke" signal, or "none" after
// an hour without one.
func waitSignal(ctx workflow.Context) (string, error) {
	got := "none"
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, "poke"), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &got) })
	sel.AddFuture(workflow.NewTimer(ctx, time.Hour), func(workflow.Future) {})
	sel.Select(ctx)
	return got, nil
}

func TestGuard(t *testing.T) {
	codec, err := payloadcodec.Parse("k1:" + base64.StdEncoding.EncodeToString(make([]byte, payloadcodec.KeySize)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		require   bool
		encrypted bool
		want      string
	}{
		{"required, clear signal dropped", true, false, "none"},
		{"required, encrypted signal delivered", true, true, "hello"},
		{"not required, clear signal delivered", false, false, "hello"},
		{"not required, encrypted signal delivered", false, true, "hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{&signalguard.Interceptor{Require: tc.require}}})
			if tc.encrypted {
				env.SetDataConverter(converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec))
			}
			env.RegisterWorkflow(waitSignal)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow("poke", "hello") }, time.Minute)
			env.ExecuteWorkflow(waitSignal)
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := env.GetWorkflowResult(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("workflow saw %q, want %q", got, tc.want)
			}
		})
	}
}
