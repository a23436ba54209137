package loading

import (
	"context"
	"strings"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/jobs"
	"github.com/lakepipe/lakepipe/internal/objstore"
)

// EventTarget is a pipe that an object-created event concerns.
type EventTarget struct {
	WorkflowID string
	Path       string // relative to the pipe's volume, never ""
}

// EventRoute is an EVENT_NOTIFICATION pipe and the place of its volume.
type EventRoute struct {
	WorkflowID string
	Bucket     string
	Prefix     string // the volume's directory in Bucket, "" or ending in "/"
}

// EventRoutes maps object keys to the EVENT_NOTIFICATION pipes whose
// volumes hold them. It is a snapshot of the catalog taken by
// Engine.EventRoutes, so a batch of events costs one catalog read however
// many records it has; it is read-only and safe for concurrent use.
type EventRoutes struct {
	byBucket map[string][]EventRoute
	n        int
}

// NewEventRoutes builds EventRoutes from routes (tests build them by hand;
// Engine.EventRoutes reads them from the catalog).
func NewEventRoutes(routes []EventRoute) *EventRoutes {
	rt := &EventRoutes{byBucket: map[string][]EventRoute{}, n: len(routes)}
	for _, r := range routes {
		rt.byBucket[r.Bucket] = append(rt.byBucket[r.Bucket], r)
	}
	return rt
}

// Len is the number of EVENT_NOTIFICATION pipes.
func (rt *EventRoutes) Len() int { return rt.n }

// Route returns the pipes whose volume holds bucket/key (key as stored,
// already URL-decoded), with key's path relative to each volume. A key
// that is its volume's directory itself concerns no pipe.
func (rt *EventRoutes) Route(bucket, key string) []EventTarget {
	var out []EventTarget
	for _, r := range rt.byBucket[bucket] {
		if rel, ok := strings.CutPrefix(key, r.Prefix); ok && rel != "" {
			out = append(out, EventTarget{WorkflowID: r.WorkflowID, Path: rel})
		}
	}
	return out
}

// EventRoutes reads the EVENT_NOTIFICATION pipes of every schema and
// where their volumes lie, in two catalog reads (all pipes, all volumes).
// A pipe's volume is looked up in the pipe's own schema, as the pipe's
// activities do; a pipe whose volume is gone or unreadable is left out.
func (e *Loader) EventRoutes(ctx context.Context) (*EventRoutes, error) {
	pipes, err := e.Cat.ListAll(ctx, catalog.KindPipe)
	if err != nil {
		return nil, err
	}
	type volKey struct{ schema, name string }
	var wanted []catalog.Object
	var specs []catalog.PipeSpec
	for _, o := range pipes {
		var spec catalog.PipeSpec
		if o.Decode(&spec) != nil || spec.Kind != jobs.KindVolume || spec.Properties["ingest_mode"] != "EVENT_NOTIFICATION" {
			continue
		}
		wanted, specs = append(wanted, o), append(specs, spec)
	}
	if len(wanted) == 0 {
		return NewEventRoutes(nil), nil
	}
	vols, err := e.Cat.ListAll(ctx, catalog.KindVolume)
	if err != nil {
		return nil, err
	}
	locs := make(map[volKey]objstore.Location, len(vols))
	for _, v := range vols {
		var vs catalog.VolumeSpec
		if v.Decode(&vs) != nil {
			continue
		}
		if loc, err := objstore.ParseLocation(vs.Location); err == nil {
			locs[volKey{v.Schema, v.Name}] = loc
		}
	}
	var routes []EventRoute
	for i, o := range wanted {
		loc, ok := locs[volKey{o.Schema, specs[i].Input}]
		if !ok {
			continue
		}
		routes = append(routes, EventRoute{WorkflowID: e.WithSchema(o.Schema).PipeWorkflowID(o.Name), Bucket: loc.Bucket, Prefix: loc.Prefix})
	}
	return NewEventRoutes(routes), nil
}
