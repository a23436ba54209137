package core

import (
	"context"
	"fmt"
	"strconv"

	"github.com/lakepipe/lakepipe/internal/catalog"
	"github.com/lakepipe/lakepipe/internal/jobs"
)

// ParamsOf derives the workflow parameters from a pipe's spec.
func (e *Core) ParamsOf(name string, spec catalog.PipeSpec) jobs.PipeParams {
	p := jobs.PipeParams{Workspace: e.Cfg.Workspace, Schema: e.Cfg.Schema, Name: name, Kind: spec.Kind,
		IngestMode: spec.Properties["ingest_mode"], PollSeconds: 30}
	if spec.Kind == jobs.KindKafka {
		p.PollSeconds = 60
	}
	// A pipe runs every BATCH_INTERVAL_IN_SECONDS, as the ClickZetta
	// Lakehouse documentation says of pipes of both kinds;
	// POLL_INTERVAL_IN_SECONDS, when given, takes precedence.
	if v, err := strconv.Atoi(spec.Properties["poll_interval_in_seconds"]); err == nil && v > 0 {
		p.PollSeconds = v
	} else if v, err := strconv.Atoi(spec.Properties["batch_interval_in_seconds"]); err == nil && v > 0 && p.IngestMode != "EVENT_NOTIFICATION" {
		p.PollSeconds = v
	}
	if p.IngestMode == "EVENT_NOTIFICATION" && spec.Properties["poll_interval_in_seconds"] == "" {
		// Events drive the pipe; the listing is only a safety net.
		p.PollSeconds = 300
	}
	if v, err := strconv.Atoi(spec.Properties["max_files_per_batch"]); err == nil && v > 0 {
		p.MaxFilesPerTurn = v
	}
	if v, err := strconv.Atoi(spec.Properties["initial_delay_in_seconds"]); err == nil && v > 0 {
		p.InitialDelaySeconds = v
	}
	if !spec.CreatedAt.IsZero() {
		p.Generation = spec.CreatedAt.UnixNano()
	}
	return p
}

// ActivePipe loads a pipe's spec for its activities; a missing pipe is
// ErrPipeGone.
func (e *Core) ActivePipe(ctx context.Context, p jobs.PipeParams) (catalog.PipeSpec, error) {
	var spec catalog.PipeSpec
	ok, err := e.Cat.Get(ctx, catalog.KindPipe, p.Schema, p.Name, &spec)
	if err != nil {
		return spec, err
	}
	if !ok {
		return spec, fmt.Errorf("pipe %s.%s: %w", p.Schema, p.Name, ErrPipeGone)
	}
	if p.Generation != 0 && spec.CreatedAt.UnixNano() != p.Generation {
		return spec, fmt.Errorf("pipe %s.%s was dropped and created again since this workflow started: %w", p.Schema, p.Name, ErrPipeGone)
	}
	return spec, nil
}
