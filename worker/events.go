package worker

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/lakepipe/lakepipe/internal/engine"
	"github.com/lakepipe/lakepipe/workflows"
)

// s3Event is the standard S3 event notification body, as S3, MinIO, OSS
// and versitygw send it (only the fields lakepipe needs).
type s3Event struct {
	Records []struct {
		EventName string `json:"eventName"`
		S3        struct {
			Bucket struct {
				Name string `json:"name"`
			} `json:"bucket"`
			Object struct {
				Key string `json:"key"`
			} `json:"object"`
		} `json:"s3"`
	} `json:"Records"`
}

// eventHandler accepts S3 event notifications and signals the pipes whose
// volumes they concern, so that a new file loads within about a second.
func eventHandler(eng *engine.Engine, orch engine.Orchestrator, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST S3 event notifications here", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var ev s3Event
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, "not an S3 event notification: "+err.Error(), http.StatusBadRequest)
			return
		}
		// Paths per pipe, so that one signal carries a whole batch.
		batches := map[string][]string{}
		var order []string
		for _, rec := range ev.Records {
			if !strings.HasPrefix(rec.EventName, "s3:ObjectCreated:") && !strings.HasPrefix(rec.EventName, "ObjectCreated:") {
				continue // test events, deletions
			}
			key, err := url.QueryUnescape(rec.S3.Object.Key)
			if err != nil {
				key = rec.S3.Object.Key
			}
			targets, err := eng.RouteEvent(r.Context(), rec.S3.Bucket.Name, key)
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			for _, t := range targets {
				if _, ok := batches[t.WorkflowID]; !ok {
					order = append(order, t.WorkflowID)
				}
				batches[t.WorkflowID] = append(batches[t.WorkflowID], t.Path)
			}
		}
		for _, id := range order {
			if err := orch.Signal(r.Context(), id, workflows.SignalFiles, workflows.FilesSignal{Paths: batches[id]}); err != nil {
				log.Warn("signal pipe with new files", "workflow_id", id, "error", err)
			}
		}
		w.WriteHeader(http.StatusOK)
	})
}
