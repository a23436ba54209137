package engine

import (
	"context"
	"strings"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/objstore"
)

// EventTarget is a pipe that an object-created event concerns.
type EventTarget struct {
	WorkflowID string
	Path       string // relative to the pipe's volume
}

// RouteEvent finds the EVENT_NOTIFICATION pipes whose volume holds
// bucket/key.
func (e *Engine) RouteEvent(ctx context.Context, bucket, key string) ([]EventTarget, error) {
	pipes, err := e.cat.ListAll(ctx, catalog.KindPipe)
	if err != nil {
		return nil, err
	}
	var out []EventTarget
	for _, o := range pipes {
		var spec catalog.PipeSpec
		if o.Decode(&spec) != nil || spec.Kind != "VOLUME" || spec.Properties["ingest_mode"] != "EVENT_NOTIFICATION" {
			continue
		}
		var vs catalog.VolumeSpec
		ok, err := e.cat.Get(ctx, catalog.KindVolume, o.Schema, spec.Input, &vs)
		if err != nil || !ok {
			continue
		}
		loc, err := objstore.ParseLocation(vs.Location)
		if err != nil || loc.Bucket != bucket || !strings.HasPrefix(key, loc.Prefix) {
			continue
		}
		out = append(out, EventTarget{WorkflowID: e.WithSchema(o.Schema).PipeWorkflowID(o.Name), Path: strings.TrimPrefix(key, loc.Prefix)})
	}
	return out, nil
}
