package loading

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/core"
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

// EventQueue is a queue that EVENT_NOTIFICATION pipes name (EVENT_QUEUE)
// for their store's event notifications: a Kafka topic, or an SQS queue
// read with the pipe's storage connection's keys.
type EventQueue struct {
	// URL is the property's value: kafka://host:port[,host:port]/topic,
	// or an SQS queue URL.
	URL string
	// Kafka: where and what.
	Brokers []string
	Topic   string
	// SQS: the connection's region and keys (never printed).
	Region, AccessID, AccessKey string
}

// IsKafka says whether the queue is a Kafka topic (else SQS).
func (q EventQueue) IsKafka() bool { return q.Topic != "" }

// ParseEventQueue checks an EVENT_QUEUE value: kafka://host:port[,…]/topic
// or an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue>,
// or http(s)://host[:port]/<account>/<queue> of a compatible server).
func ParseEventQueue(v string) (EventQueue, error) {
	v = strings.TrimSpace(v)
	q := EventQueue{URL: v}
	if rest, ok := strings.CutPrefix(v, "kafka://"); ok {
		brokers, topic, _ := strings.Cut(rest, "/")
		if brokers == "" || topic == "" || strings.ContainsAny(topic, "/?# ") {
			return q, fmt.Errorf("EVENT_QUEUE = %q: expected kafka://host:port[,host:port]/topic", v)
		}
		q.Brokers, q.Topic = strings.Split(brokers, ","), topic
		return q, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Count(strings.Trim(u.Path, "/"), "/") != 1 {
		return q, fmt.Errorf("EVENT_QUEUE = %q: expected kafka://host:port/topic or an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue>)", v)
	}
	return q, nil
}

// EventQueues returns the queues EVENT_NOTIFICATION pipes name, each once
// (by URL and keys). An SQS queue is read with the keys of the pipe's
// storage connection; a pipe whose volume or connection is gone is left
// out.
func (e *Loader) EventQueues(ctx context.Context) ([]EventQueue, error) {
	pipes, err := e.Cat.ListAll(ctx, catalog.KindPipe)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []EventQueue
	for _, o := range pipes {
		var spec catalog.PipeSpec
		if o.Decode(&spec) != nil || spec.Kind != jobs.KindVolume || spec.Properties["ingest_mode"] != "EVENT_NOTIFICATION" || spec.Properties["event_queue"] == "" {
			continue
		}
		q, err := ParseEventQueue(spec.Properties["event_queue"])
		if err != nil {
			continue // checked when set
		}
		if !q.IsKafka() {
			conn, secret, err := e.WithSchema(o.Schema).volumeConnection(ctx, spec.Input)
			if err != nil {
				continue
			}
			q.Region, q.AccessID, q.AccessKey = conn.Region, conn.AccessID, secret
		}
		key := q.URL + "\x00" + q.AccessID + "\x00" + q.AccessKey
		if !seen[key] {
			seen[key] = true
			out = append(out, q)
		}
	}
	return out, nil
}

// volumeConnection is the storage connection of a volume, with its key.
func (e *Loader) volumeConnection(ctx context.Context, volume string) (catalog.ConnectionSpec, string, error) {
	var vs catalog.VolumeSpec
	ok, err := e.Cat.Get(ctx, catalog.KindVolume, e.Cfg.Schema, volume, &vs)
	if err != nil || !ok {
		return catalog.ConnectionSpec{}, "", fmt.Errorf("volume %s: %v", volume, err)
	}
	var c catalog.ConnectionSpec
	ok, err = e.Cat.Get(ctx, catalog.KindConnection, core.GlobalSchema, vs.Connection, &c)
	if err != nil || !ok {
		return c, "", fmt.Errorf("storage connection %s: %v", vs.Connection, err)
	}
	secret, err := e.Cat.Secret(ctx, catalog.KindConnection, core.GlobalSchema, vs.Connection)
	return c, secret, err
}
