package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The SDK tags one metric with different key sets; the scrape must still
// succeed, with the union of the keys.
func TestSDKHandlerServesUnionOfTags(t *testing.T) {
	w := New()
	h := w.SDK()
	h.WithTags(map[string]string{"namespace": "default"}).Counter("temporal_request").Inc(2)
	h.WithTags(map[string]string{"namespace": "default", "operation": "PollActivityTaskQueue"}).Counter("temporal_request").Inc(1)
	h.WithTags(map[string]string{"activity_type": "CopyFiles"}).Timer("temporal_activity_execution_latency").Record(30 * time.Millisecond)
	h.Gauge("temporal_worker_task_slots_available").Update(7)
	done := w.ActivityStarted("CopyFiles")
	w.Refresh("public", "sales_summary", "INCREMENTAL", "SUCCEED", 40*time.Millisecond)

	rec := httptest.NewRecorder()
	w.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	done()
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, body)
	}
	for _, want := range []string{
		`temporal_request_total{namespace="default",operation=""} 2`,
		`temporal_request_total{namespace="default",operation="PollActivityTaskQueue"} 1`,
		`temporal_activity_execution_latency_seconds_bucket{activity_type="CopyFiles",le="0.032"} 1`,
		`temporal_activity_execution_latency_seconds_count{activity_type="CopyFiles"} 1`,
		`temporal_worker_task_slots_available 7`,
		`lakepipe_worker_activities_running{activity="CopyFiles"} 1`,
		`lakepipe_dynamic_refresh_total{dynamic_table="public.sales_summary",mode="INCREMENTAL",state="SUCCEED"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}
}
