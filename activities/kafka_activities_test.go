package activities

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/metrics"
)

func TestKafkaOffsets(t *testing.T) {
	initial := []jobs.PartitionOffset{{Partition: 0, Offset: 0}, {Partition: 1, Offset: 12}}
	end := []jobs.PartitionOffset{{Partition: 0, Offset: 40}, {Partition: 1, Offset: 52}}
	acts := []struct {
		name string
		fn   func(a *Activities) any
		want []jobs.PartitionOffset
	}{
		{"KafkaOffsets", func(a *Activities) any { return a.KafkaOffsets }, initial},
		{"KafkaEnd", func(a *Activities) any { return a.KafkaEnd }, end},
	}
	tests := []struct {
		name   string
		offErr error
		want   *wantErr
	}{
		{"offsets", nil, nil},
		{"error", errors.New("kafka: broker not available"), &wantErr{msg: "kafka: broker not available"}},
		// Errors no retry fixes pause the pipe, and every error's text is
		// bounded, as for volume pipes.
		{"permanent", core.Permanent(errors.New("topic t: not authorized")), &wantErr{nonRetryable: true, errType: jobs.ErrTypePipeInvalid, msg: "topic t: not authorized"}},
		{"long", errors.New(strings.Repeat("é", errtext.MaxMessage)), &wantErr{msg: errtext.Cap(strings.Repeat("é", errtext.MaxMessage), errtext.MaxMessage)}},
	}
	for _, act := range acts {
		for _, tt := range tests {
			t.Run(act.name+"/"+tt.name, func(t *testing.T) {
				k := &fakeKafka{initial: initial, end: end, offErr: tt.offErr}
				eng := &fakeEngine{kafka: k}
				a := &Activities{eng: eng}
				env := newTestEnv(t, a)
				v, err := env.ExecuteActivity(act.fn(a), jobs.KafkaOffsetsInput{Params: testPipe})
				checkErr(t, err, tt.want)
				if len(eng.opened) != 1 || eng.opened[0] != testPipe {
					t.Errorf("opened %+v, want %+v once", eng.opened, testPipe)
				}
				if tt.want != nil {
					return
				}
				var got jobs.KafkaOffsetsResult
				if err := v.Get(&got); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Offsets, act.want) {
					t.Errorf("offsets %+v, want %+v", got.Offsets, act.want)
				}
			})
		}
	}
}

// TestOpenKafkaPipeErrors: a Kafka pipe that is gone ends its workflow
// like a volume pipe.
func TestOpenKafkaPipeErrors(t *testing.T) {
	gone := fmt.Errorf("pipe s.p: %w", core.ErrPipeGone)
	errs := []struct {
		name string
		err  error
		want wantErr
	}{
		{"pipe gone", gone, wantErr{nonRetryable: true, errType: jobs.ErrTypePipeGone, msg: gone.Error()}},
		{"transient", errors.New("catalog: connection reset"), wantErr{msg: "catalog: connection reset"}},
		// A Kafka pipe whose table was dropped pauses with the reason
		// instead of retrying forever.
		{"permanent", core.Permanent(errors.New("table s.t does not exist")), wantErr{nonRetryable: true, errType: jobs.ErrTypePipeInvalid, msg: "table s.t does not exist"}},
		{"long", errors.New(strings.Repeat("x", 3*errtext.MaxMessage)), wantErr{msg: errtext.Cap(strings.Repeat("x", 3*errtext.MaxMessage), errtext.MaxMessage)}},
	}
	acts := []struct {
		name string
		run  func(env *testEnv, a *Activities) error
	}{
		{"KafkaOffsets", func(env *testEnv, a *Activities) error {
			_, err := env.ExecuteActivity(a.KafkaOffsets, jobs.KafkaOffsetsInput{Params: testPipe})
			return err
		}},
		{"KafkaEnd", func(env *testEnv, a *Activities) error {
			_, err := env.ExecuteLocalActivity(a.KafkaEnd, jobs.KafkaOffsetsInput{Params: testPipe})
			return localErr(err)
		}},
		{"KafkaBatch", func(env *testEnv, a *Activities) error {
			_, err := env.ExecuteActivity(a.KafkaBatch, jobs.KafkaBatchInput{Params: testPipe})
			return err
		}},
		// Since long past: the wait's first read is due at once.
		{"AwaitRecords", func(env *testEnv, a *Activities) error {
			_, err := env.ExecuteActivity(a.AwaitRecords, jobs.AwaitRecordsInput{Params: testPipe, For: time.Minute, Since: time.Now().Add(-time.Hour)})
			return err
		}},
	}
	for _, act := range acts {
		for _, e := range errs {
			t.Run(act.name+"/"+e.name, func(t *testing.T) {
				m := metrics.New()
				a := &Activities{eng: &fakeEngine{openErr: e.err}, Metrics: m}
				checkErr(t, act.run(newTestEnv(t, a), a), &e.want)
				if n := metric(t, m, series("lakepipe_pipe_errors_total")); n != 0 {
					t.Errorf("errors_total = %v, want 0", n)
				}
			})
		}
	}
}

func TestKafkaBatch(t *testing.T) {
	in := jobs.KafkaBatchInput{
		Params:   testPipe,
		Offsets:  []jobs.PartitionOffset{{Partition: 0, Offset: 10}},
		End:      []jobs.PartitionOffset{{Partition: 0, Offset: 20}},
		Rejected: 2,
	}
	res := jobs.KafkaBatchResult{
		Offsets: []jobs.PartitionOffset{{Partition: 0, Offset: 20}},
		Records: 10, Rows: 8, Filtered: 1, Rejected: 1, Lag: 3, More: true,
		FirstError: "partition 0 offset 14: not JSON",
	}
	long := strings.Repeat("é", errtext.MaxMessage)
	tests := []struct {
		name     string
		retry    bool  // in.Retry
		attempt  int32 // the activity's attempt; 0: the first
		result   jobs.KafkaBatchResult
		batchErr error
		// wantRetried is what LoadBatch is told: remove what an
		// earlier attempt left first.
		wantRetried bool
		want        *wantErr
		wantResult  jobs.KafkaBatchResult
	}{
		{name: "a first attempt", result: res, wantResult: res},
		{name: "a batch retried by the workflow", retry: true, result: res, wantRetried: true, wantResult: res},
		{name: "a later attempt", attempt: 2, result: res, wantRetried: true, wantResult: res},
		{
			name:       "texts of the result are capped",
			result:     jobs.KafkaBatchResult{Offsets: in.Offsets, Paused: true, FirstError: long, Reason: long},
			wantResult: jobs.KafkaBatchResult{Offsets: in.Offsets, Paused: true, FirstError: errtext.Cap(long, errtext.MaxMessage), Reason: errtext.Cap(long, errtext.MaxMessage)},
		},
		{name: "an error is retried", batchErr: errors.New("clickhouse: timeout"), want: &wantErr{msg: "clickhouse: timeout"}},
		{
			name:     "a permanent error pauses the pipe",
			batchErr: core.Permanent(errors.New("table s.t does not exist")),
			want:     &wantErr{nonRetryable: true, errType: jobs.ErrTypePipeInvalid, msg: "table s.t does not exist"},
		},
		{name: "a long error is capped", batchErr: errors.New(long), want: &wantErr{msg: errtext.Cap(long, errtext.MaxMessage)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &fakeKafka{result: tt.result, batchErr: tt.batchErr, warnings: []string{"partition 3 was deleted"}}
			m := metrics.New()
			a := &Activities{eng: &fakeEngine{kafka: k}, Metrics: m}
			env := newTestEnv(t, a)
			env.beats.attempt = tt.attempt
			bin := in
			bin.Retry = tt.retry
			v, err := env.ExecuteActivity(a.KafkaBatch, bin)
			checkErr(t, err, tt.want)
			if len(k.batchIn) != 1 || !reflect.DeepEqual(k.batchIn[0], bin) {
				t.Fatalf("LoadBatch(%+v), want (%+v) once", k.batchIn, bin)
			}
			if k.retried[0] != tt.wantRetried {
				t.Errorf("LoadBatch retried = %v, want %v", k.retried[0], tt.wantRetried)
			}
			// What does not fail the batch reaches the worker's log.
			if !env.logs.warned("kafka pipe", "pipe", "p", "warning", "partition 3 was deleted") {
				t.Errorf("warning not logged; warnings: %v", env.logs.warns)
			}
			wantErrors, wantBatches := 0.0, 1.0
			if tt.want != nil {
				wantErrors, wantBatches = 1, 0
			}
			if n := metric(t, m, series("lakepipe_pipe_errors_total")); n != wantErrors {
				t.Errorf("errors_total = %v, want %v", n, wantErrors)
			}
			if n := metric(t, m, series("lakepipe_pipe_kafka_batch_seconds_count")); n != wantBatches {
				t.Errorf("kafka_batch_seconds_count = %v, want %v", n, wantBatches)
			}
			if tt.want != nil {
				return
			}
			var got jobs.KafkaBatchResult
			if err := v.Get(&got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.wantResult) {
				t.Errorf("result\n got %+v\nwant %+v", got, tt.wantResult)
			}
			for s, want := range map[string]int64{
				"lakepipe_pipe_kafka_records_total": tt.result.Records,
				"lakepipe_pipe_rows_total":          tt.result.Rows,
				"lakepipe_pipe_rows_rejected_total": tt.result.Rejected,
				"lakepipe_pipe_kafka_lag_records":   tt.result.Lag,
			} {
				if n := metric(t, m, series(s)); n != float64(want) {
					t.Errorf("%s = %v, want %d", s, n, want)
				}
			}
		})
	}
}
