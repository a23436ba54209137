package activities

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lakepipe/lakepipe/internal/core"
	"github.com/lakepipe/lakepipe/internal/errtext"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/metrics"
)

var testTable = jobs.DynamicTableParams{Workspace: "default", Schema: "s", Name: "dt", IntervalSeconds: 60}

var tableGone = fmt.Errorf("dynamic table s.dt: %w", core.ErrDynamicTableGone)

func TestRefreshDynamicTable(t *testing.T) {
	const (
		succeeded = `lakepipe_dynamic_refresh_total{dynamic_table="s.dt",mode="INCREMENTAL",state="SUCCEED"}`
		failed    = `lakepipe_dynamic_refresh_total{dynamic_table="s.dt",mode="FULL",state="FAILED"}`
	)
	tests := []struct {
		name   string
		result jobs.RefreshResult
		err    error
		want   *wantErr
		// wantCounted is the refresh_total series that counts it ("":
		// none does).
		wantCounted string
	}{
		{
			name:        "a refresh",
			result:      jobs.RefreshResult{State: jobs.RefreshSucceeded, Mode: jobs.RefreshIncremental, Rows: 5},
			wantCounted: succeeded,
		},
		{
			// A refresh whose query failed is a result, not an error:
			// the next interval tries again.
			name:        "a failed refresh",
			result:      jobs.RefreshResult{State: jobs.RefreshFailed, Mode: jobs.RefreshFull, Error: "division by zero"},
			wantCounted: failed,
		},
		{
			name: "the table is gone",
			err:  tableGone,
			want: &wantErr{nonRetryable: true, errType: jobs.ErrTypeDynamicTableGone, msg: tableGone.Error()},
		},
		{name: "an error is retried", err: errors.New("clickhouse: EOF"), want: &wantErr{msg: "clickhouse: EOF"}},
		{name: "a long error is capped", err: errors.New(strings.Repeat("x", 3*errtext.MaxMessage)), want: &wantErr{msg: errtext.Cap(strings.Repeat("x", 3*errtext.MaxMessage), errtext.MaxMessage)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &fakeEngine{refresh: tt.result, refreshErr: tt.err}
			m := metrics.New()
			a := &Activities{eng: eng, Metrics: m}
			env := newTestEnv(t, a)
			v, err := env.ExecuteActivity(a.RefreshDynamicTable, jobs.RefreshInput{Params: testTable, Trigger: "MANUAL"})
			checkErr(t, err, tt.want)
			if want := []string{"refresh s.dt MANUAL"}; !slices.Equal(eng.calls, want) {
				t.Errorf("calls %q, want %q", eng.calls, want)
			}
			// A refresh that did not run (an error) is not counted, under
			// any labels.
			wantCount := 0.0
			if tt.wantCounted != "" {
				wantCount = 1
				if n := metric(t, m, tt.wantCounted); n != 1 {
					t.Errorf("%s = %v, want 1", tt.wantCounted, n)
				}
			}
			if n := metricSum(t, m, "lakepipe_dynamic_refresh_total"); n != wantCount {
				t.Errorf("lakepipe_dynamic_refresh_total = %v in all, want %v", n, wantCount)
			}
			if n := metricSum(t, m, "lakepipe_dynamic_refresh_seconds_count"); n != wantCount {
				t.Errorf("lakepipe_dynamic_refresh_seconds_count = %v in all, want %v", n, wantCount)
			}
			if tt.want != nil {
				return
			}
			var got jobs.RefreshResult
			if err := v.Get(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.result {
				t.Errorf("result %+v, want %+v", got, tt.result)
			}
		})
	}
}

func TestPlanRefresh(t *testing.T) {
	up := []jobs.DynamicTableParams{
		{Workspace: "default", Schema: "s", Name: "base", IntervalSeconds: 60},
		{Workspace: "default", Schema: "t", Name: "mid", IntervalSeconds: 30},
	}
	tests := []struct {
		name string
		plan []jobs.DynamicTableParams
		err  error
		want *wantErr
	}{
		{name: "upstream tables", plan: up},
		{name: "no upstream"},
		{
			name: "the table is gone", err: tableGone,
			want: &wantErr{nonRetryable: true, errType: jobs.ErrTypeDynamicTableGone, msg: tableGone.Error()},
		},
		{name: "an error is retried", err: errors.New("catalog: timeout"), want: &wantErr{msg: "catalog: timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &fakeEngine{plan: tt.plan, planErr: tt.err}
			a := &Activities{eng: eng}
			env := newTestEnv(t, a)
			v, err := env.ExecuteActivity(a.PlanRefresh, jobs.PlanInput{Params: testTable})
			checkErr(t, err, tt.want)
			if want := []string{"plan s.dt"}; !slices.Equal(eng.calls, want) {
				t.Errorf("calls %q, want %q", eng.calls, want)
			}
			if tt.want != nil {
				return
			}
			var got jobs.PlanResult
			if err := v.Get(&got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Upstream, tt.plan) {
				t.Errorf("upstream %+v, want %+v", got.Upstream, tt.plan)
			}
		})
	}
}

func TestWaitRefresh(t *testing.T) {
	chain := jobs.RefreshChainResult{Refreshes: []jobs.ChainStep{
		{Name: "s.base", Result: jobs.RefreshResult{State: jobs.RefreshSucceeded, Mode: jobs.RefreshFull, Rows: 3}},
		{Name: "s.dt", Result: jobs.RefreshResult{State: jobs.RefreshFailed, Mode: jobs.RefreshIncremental, Error: "bad cast"}},
	}}
	id := jobs.RefreshWorkflowID(testTable)
	tests := []struct {
		name string
		err  error
		want *wantErr
	}{
		{name: "the refresh's result"},
		{name: "an error is retried", err: errors.New("temporal: unavailable"), want: &wantErr{msg: "temporal: unavailable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &fakeEngine{chain: chain, waitErr: tt.err}
			a := &Activities{eng: eng}
			env := newTestEnv(t, a)
			v, err := env.ExecuteActivity(a.WaitRefresh, jobs.WaitRefreshInput{WorkflowID: id})
			checkErr(t, err, tt.want)
			if want := []string{"wait " + id}; !slices.Equal(eng.calls, want) {
				t.Errorf("calls %q, want %q", eng.calls, want)
			}
			if tt.want != nil {
				return
			}
			var got jobs.RefreshChainResult
			if err := v.Get(&got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, chain) {
				t.Errorf("result %+v, want %+v", got, chain)
			}
		})
	}
}
